//! The decimal text of an int given as `ffi.BigInt` words: a reference the float conversions
//! of BigInts are checked against (`f64::from_str` of it rounds correctly).

/// The decimal text of the int the words hold.
pub fn decimal(words: &[i64]) -> String {
    let negative = words.last().is_some_and(|w| *w < 0);
    let mut limbs: Vec<u64> = words.iter().map(|w| *w as u64).collect();
    if negative {
        let mut carry = true;
        for limb in limbs.iter_mut() {
            let (sum, overflow) = (!*limb).overflowing_add(u64::from(carry));
            *limb = sum;
            carry = overflow;
        }
    }
    // Base 2^32, most significant first, divided by 10^9 until nothing is left.
    let mut digits32: Vec<u64> = limbs
        .iter()
        .rev()
        .flat_map(|l| [l >> 32, l & 0xffff_ffff])
        .collect();
    let mut chunks = Vec::new();
    while digits32.iter().any(|d| *d != 0) {
        let mut rem = 0u64;
        for d in digits32.iter_mut() {
            let cur = (rem << 32) | *d;
            *d = cur / 1_000_000_000;
            rem = cur % 1_000_000_000;
        }
        chunks.push(rem);
    }
    let mut text = String::from(if negative { "-" } else { "" });
    match chunks.split_last() {
        None => text.push('0'),
        Some((first, rest)) => {
            text.push_str(&first.to_string());
            for chunk in rest.iter().rev() {
                text.push_str(&format!("{chunk:09}"));
            }
        }
    }
    text
}
