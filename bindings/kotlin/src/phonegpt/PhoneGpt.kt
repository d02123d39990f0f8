package phonegpt

/** Library-wide queries and helpers (the Python module's top-level functions). */
object PhoneGpt {
    /** The loaded library's version, "0.2.0". */
    @JvmStatic val version: String get() = Native.versionString()
    /** major*10000 + minor*100 + patch of the loaded library. */
    @JvmStatic val versionNumber: Int get() = Native.versionNumber()
    /** The version of phonegpt.h the JNI shim was compiled against. */
    @JvmStatic val headerVersionNumber: Int get() = Native.headerVersionNumber()
    /** The instruction set the kernels dispatched to: "avx512bw", "fma3+avx2", "arm64+neon", ... */
    @JvmStatic val simdArch: String get() = Native.simdArch()

    /** pg_status_name() of any code, "PG_ERR_UNKNOWN" for codes the C API does not define. */
    @JvmStatic fun statusName(code: Int): String = Native.statusName(code)

    /** The split point of n items: [0, result) is the train part. */
    @JvmStatic @JvmOverloads fun splitIndex(n: Long, trainFraction: Double = 0.9): Long =
        Native.splitIndex(n, trainFraction)

    /** A whole file's bytes, read by the library (clear IoException on failure). */
    @JvmStatic fun readFile(path: String): ByteArray = Native.readFile(path)
}
