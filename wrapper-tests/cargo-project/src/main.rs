extern "C" {
    fn c_adler32(data: *const u8, len: usize) -> u32;
    fn c_prime(i: i32) -> i32;
    fn c_calls() -> i32;
}

fn main() {
    let text = b"Wikipedia";
    // SAFETY: the C functions read `len` bytes of `text` and plain ints.
    let (sum, p, calls) = unsafe {
        let sum = c_adler32(text.as_ptr(), text.len());
        let p = c_prime(4) + c_prime(13);
        (sum, p, c_calls())
    };
    println!("adler32={sum:08x} primes={p} calls={calls}");
}
