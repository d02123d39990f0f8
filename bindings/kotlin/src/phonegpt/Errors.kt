package phonegpt

/** The C API's pg_status values (pinned: never renumbered). */
enum class Status(val code: Int) {
    OK(0), INVALID_ARGUMENT(1), OUT_OF_MEMORY(2), IO(3), FORMAT(4), VERSION(5), CHECKSUM(6), GEOMETRY(7),
    TOKENIZE(8), CANCELLED(9), STATE(10), BUFFER_TOO_SMALL(11), UNSUPPORTED(12), INTERNAL(13), NOT_FINITE(14);

    /** "PG_OK", "PG_ERR_INVALID_ARGUMENT", ... as pg_status_name() spells it. */
    val statusName: String get() = if (this == OK) "PG_OK" else "PG_ERR_$name"

    companion object {
        /** The status with this code, or null for a code the C API does not define. */
        @JvmStatic fun of(code: Int): Status? = values().firstOrNull { it.code == code }
    }
}

/**
 * What every exception of the library implements: [status] says which kind, `message` is the
 * library's message. Every status has its own class, so `catch (e: TokenizeException)` works as
 * expected. All are unchecked: [StateException] is an IllegalStateException (a closed handle, a
 * call from inside its own callback, a call out of order) and [InvalidArgumentException] an
 * IllegalArgumentException, as the JDK's own checks are; every other one is a
 * [PhoneGptException]. Catch RuntimeException and test `is PhoneGptError` to get them all.
 */
interface PhoneGptError {
    val status: Status
    /** The C name of the status, e.g. "PG_ERR_IO". */
    val statusName: String
}

/** A failed libphonegpt call of a status other than STATE and INVALID_ARGUMENT (see [PhoneGptError]). */
open class PhoneGptException(override val status: Status, message: String) : RuntimeException(message), PhoneGptError {
    override val statusName: String get() = status.statusName

    companion object {
        /** Builds the exception of a C status (called by the JNI shim when a call fails). */
        @JvmStatic fun fromStatus(code: Int, message: String): RuntimeException = when (Status.of(code)) {
            Status.INVALID_ARGUMENT -> InvalidArgumentException(message)
            Status.OUT_OF_MEMORY -> OutOfMemoryException(message)
            Status.IO -> IoException(message)
            Status.FORMAT -> FormatException(message)
            Status.VERSION -> VersionException(message)
            Status.CHECKSUM -> ChecksumException(message)
            Status.GEOMETRY -> GeometryException(message)
            Status.TOKENIZE -> TokenizeException(message)
            Status.CANCELLED -> CancelledException(message)
            Status.STATE -> StateException(message)
            Status.BUFFER_TOO_SMALL -> BufferTooSmallException(message)
            Status.UNSUPPORTED -> UnsupportedException(message)
            Status.INTERNAL -> InternalException(message)
            Status.NOT_FINITE -> NotFiniteException(message)
            Status.OK, null -> InternalException("unexpected status $code: $message")
        }
    }
}

/** A bad argument or configuration field (the message names it); an IllegalArgumentException. */
class InvalidArgumentException(message: String) : IllegalArgumentException(message), PhoneGptError {
    override val status: Status get() = Status.INVALID_ARGUMENT
    override val statusName: String get() = status.statusName
}

/**
 * A closed handle, a call from inside a callback of a running call on the same handle, or a call
 * out of order; an IllegalStateException, like ONNX Runtime's closed-object error.
 */
class StateException(message: String) : IllegalStateException(message), PhoneGptError {
    override val status: Status get() = Status.STATE
    override val statusName: String get() = status.statusName
}

class OutOfMemoryException(message: String) : PhoneGptException(Status.OUT_OF_MEMORY, message)
class IoException(message: String) : PhoneGptException(Status.IO, message)
class FormatException(message: String) : PhoneGptException(Status.FORMAT, message)
class VersionException(message: String) : PhoneGptException(Status.VERSION, message)
class ChecksumException(message: String) : PhoneGptException(Status.CHECKSUM, message)
class GeometryException(message: String) : PhoneGptException(Status.GEOMETRY, message)
class TokenizeException(message: String) : PhoneGptException(Status.TOKENIZE, message)
class CancelledException(message: String) : PhoneGptException(Status.CANCELLED, message)
/** An output array or buffer smaller than what the call writes (every call's "too small" is this one). */
class BufferTooSmallException(message: String) : PhoneGptException(Status.BUFFER_TOO_SMALL, message)
class UnsupportedException(message: String) : PhoneGptException(Status.UNSUPPORTED, message)
class InternalException(message: String) : PhoneGptException(Status.INTERNAL, message)
/** A loss, gradient norm or loaded weight is NaN or infinite; nothing was changed. */
class NotFiniteException(message: String) : PhoneGptException(Status.NOT_FINITE, message)
