// phonegpt-bench: bench_peak and bench_kernels in one (optionally static) binary, so a phone
// needs a single file pushed to it. Usage: phonegpt-bench peak|kernels [their options]
// With no subcommand it runs both with their defaults.
#include <cstdio>
#include <cstring>

int bench_peak_main(int argc, char** argv);
int bench_kernels_main(int argc, char** argv);

int main(int argc, char** argv) {
    if (argc >= 2 && !std::strcmp(argv[1], "peak")) return bench_peak_main(argc - 1, argv + 1);
    if (argc >= 2 && !std::strcmp(argv[1], "kernels")) return bench_kernels_main(argc - 1, argv + 1);
    if (argc >= 2) {
        std::fprintf(stderr,
                     "usage: %s [peak|kernels] [options]   (--help after a subcommand for its "
                     "options)\n",
                     argv[0]);
        return 2;
    }
    char* none[] = {argv[0], nullptr};
    int rc = bench_peak_main(1, none);
    std::printf("\n");
    return rc != 0 ? rc : bench_kernels_main(1, none);
}
