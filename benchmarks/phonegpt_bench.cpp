// phonegpt-bench: bench_peak, bench_kernels, bench_lora and bench_quant_gemm in one (optionally
// static) binary, so a phone needs a single file pushed to it.
// Usage: phonegpt-bench peak|kernels|lora|quant [options]
// With no subcommand it runs peak and kernels with their defaults (a LoRA step at the Ailoos
// shape needs 0.5 GB and minutes: `phonegpt-bench lora --shape ailoos|gpt2 ...`, docs/phone.md).
#include <cstdio>
#include <cstring>

int bench_peak_main(int argc, char** argv);
int bench_kernels_main(int argc, char** argv);
int bench_lora_main(int argc, char** argv);
int bench_quant_gemm_main(int argc, char** argv);

int main(int argc, char** argv) {
    if (argc >= 2 && !std::strcmp(argv[1], "peak")) return bench_peak_main(argc - 1, argv + 1);
    if (argc >= 2 && !std::strcmp(argv[1], "kernels")) return bench_kernels_main(argc - 1, argv + 1);
    if (argc >= 2 && !std::strcmp(argv[1], "lora")) return bench_lora_main(argc - 1, argv + 1);
    // The int8 and dequantize-while-packing products through a quantized base (SDOT, SMMLA).
    if (argc >= 2 && !std::strcmp(argv[1], "quant")) return bench_quant_gemm_main(argc - 1, argv + 1);
    if (argc >= 2) {
        std::fprintf(stderr,
                     "usage: %s [peak|kernels|lora|quant] [options]   (--help after a subcommand for its "
                     "options)\n",
                     argv[0]);
        return 2;
    }
    char* none[] = {argv[0], nullptr};
    int rc = bench_peak_main(1, none);
    std::printf("\n");
    return rc != 0 ? rc : bench_kernels_main(1, none);
}
