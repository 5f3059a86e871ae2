package dev.throttle;

/** The layout of a packed state, as {@link PackedTransition#pack} describes it. */
final class PackedBits {

    static final int TIME_BITS = 40;

    static final long TIME_MASK = (1L << TIME_BITS) - 1;

    /** Half the range of the packed time: a packed time is read within this of now. */
    static final long HALF_RANGE = 1L << (TIME_BITS - 1);

    private PackedBits() {}
}
