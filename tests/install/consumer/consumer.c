/* Links against an installed libphonegpt and checks the header and library agree. */
#include <phonegpt/phonegpt.h>
#include <stdio.h>

int main(void) {
    pg_model_config c;
    pg_model_config_default(&c);
    if (pg_version_number() != PG_VERSION_NUMBER || pg_model_config_num_params(&c) != 1214976) {
        fprintf(stderr, "installed library does not match its header\n");
        return 1;
    }
    printf("installed libphonegpt %s works (%s)\n", pg_version_string(), pg_simd_arch());
    return 0;
}
