package phonegpt

import java.io.FileDescriptor
import java.io.FileInputStream
import java.io.IOException
import java.nio.ByteBuffer

/** Library-wide queries and helpers (the Python module's top-level functions). */
object PhoneGpt {
    /** The loaded library's version, "0.3.0". */
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

    /**
     * [length] bytes at [offset] of an open file descriptor ([length] < 0: to the end), read
     * without moving or closing it; a range past the file's end is an [InvalidArgumentException],
     * a short or failed read an [IoException].
     */
    @JvmStatic fun readFileDescriptor(fd: FileDescriptor, offset: Long, length: Long): ByteArray {
        if (offset < 0) throw InvalidArgumentException("readFileDescriptor: offset $offset is negative")
        // Not closed: closing the stream would close the caller's descriptor.
        val channel = FileInputStream(fd).channel
        val size = try { channel.size() } catch (e: IOException) { throw IoException("readFileDescriptor: ${e.message}") }
        val n = if (length < 0) size - offset else length
        if (n < 0 || offset + n > size)  // as pg_model_load_from_fd words it
            throw InvalidArgumentException("readFileDescriptor: length $n at offset $offset runs past the file's $size bytes")
        if (n > Int.MAX_VALUE - 8) throw UnsupportedException("readFileDescriptor: $n bytes do not fit a Java array")
        val out = ByteBuffer.allocate(n.toInt())
        try {
            while (out.hasRemaining()) {
                if (channel.read(out, offset + out.position()) < 0)
                    throw IoException("readFileDescriptor: the file ended after ${out.position()} of $n bytes")
            }
        } catch (e: IOException) {
            throw IoException("readFileDescriptor: ${e.message}")
        }
        return out.array()
    }
}
