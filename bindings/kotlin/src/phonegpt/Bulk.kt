package phonegpt

import java.nio.Buffer
import java.nio.ByteOrder
import java.nio.FloatBuffer
import java.nio.IntBuffer

// How bulk data reaches the shim: a direct buffer in native byte order is passed as it is (the
// library reads or writes its memory in place, from position() for remaining() elements; position
// and limit are left unchanged); an array-backed buffer passes its array; an array is copied by
// the shim. A direct buffer in the wrong byte order is refused rather than silently misread.

internal class Ints(val array: IntArray?, val buffer: IntBuffer?, val offset: Int, val length: Int)
internal class Floats(val array: FloatArray?, val buffer: FloatBuffer?, val offset: Int, val length: Int)

private fun checkDirect(b: Buffer, order: ByteOrder, what: String) {
    if (order != ByteOrder.nativeOrder())
        throw InvalidArgumentException("$what: a direct buffer must use ByteOrder.nativeOrder() ($order given)")
}

internal fun ints(a: IntArray) = Ints(a, null, 0, a.size)

internal fun ints(b: IntBuffer, what: String, output: Boolean = false): Ints {
    if (output && b.isReadOnly) throw InvalidArgumentException("$what: the buffer is read-only")
    return when {
        b.isDirect -> { checkDirect(b, b.order(), what); Ints(null, b, b.position(), b.remaining()) }
        b.hasArray() -> Ints(b.array(), null, b.arrayOffset() + b.position(), b.remaining())
        output -> throw InvalidArgumentException("$what: needs a direct or array-backed buffer")
        else -> { val copy = IntArray(b.remaining()); b.duplicate().get(copy); ints(copy) }
    }
}

internal fun floats(a: FloatArray) = Floats(a, null, 0, a.size)

internal fun floats(b: FloatBuffer, what: String, output: Boolean = false): Floats {
    if (output && b.isReadOnly) throw InvalidArgumentException("$what: the buffer is read-only")
    return when {
        b.isDirect -> { checkDirect(b, b.order(), what); Floats(null, b, b.position(), b.remaining()) }
        b.hasArray() -> Floats(b.array(), null, b.arrayOffset() + b.position(), b.remaining())
        output -> throw InvalidArgumentException("$what: needs a direct or array-backed buffer")
        else -> { val copy = FloatArray(b.remaining()); b.duplicate().get(copy); floats(copy) }
    }
}

/** A direct IntBuffer in native byte order, ready for zero-copy token data. */
fun directIntBuffer(capacity: Int): IntBuffer =
    java.nio.ByteBuffer.allocateDirect(capacity * 4).order(ByteOrder.nativeOrder()).asIntBuffer()

/** A direct FloatBuffer in native byte order, ready for zero-copy logits and weights. */
fun directFloatBuffer(capacity: Int): FloatBuffer =
    java.nio.ByteBuffer.allocateDirect(capacity * 4).order(ByteOrder.nativeOrder()).asFloatBuffer()
