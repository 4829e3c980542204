//! A launch's argument words for the generated host function's safe-call entry, filled in
//! order into a buffer of exactly the launch's length, on the stack for up to
//! [`INLINE_WORDS`] (no allocation and no clearing per launch), else on the heap.

use std::mem::MaybeUninit;

use safecall_runtime::abi::TVMFFIAny;

/// The argument words kept on the stack (longer launches use the heap).
pub(crate) const INLINE_WORDS: usize = 40;

/// The words (see the module docs): `buf[..len]` are written.
pub(crate) struct Words<'a> {
    buf: &'a mut [MaybeUninit<TVMFFIAny>],
    len: usize,
}

impl<'a> Words<'a> {
    /// `n` words in `inline` when they fit, else in `heap`.
    pub(crate) fn new(
        inline: &'a mut [MaybeUninit<TVMFFIAny>],
        heap: &'a mut Vec<MaybeUninit<TVMFFIAny>>,
        n: usize,
    ) -> Self {
        let buf = if n <= inline.len() {
            &mut inline[..n]
        } else {
            heap.resize_with(n, MaybeUninit::uninit);
            &mut heap[..]
        };
        Words { buf, len: 0 }
    }

    /// Writes the next word (a panic past the buffer's end: the launch's length was counted
    /// from the same kinds that push).
    #[inline]
    pub(crate) fn push(&mut self, word: TVMFFIAny) {
        self.buf[self.len].write(word);
        self.len += 1;
    }

    /// How many words are written.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Overwrites word `i`, already written (inlined always: called once per pointer of a
    /// launch, where a call costs more than the store).
    #[inline(always)]
    pub(crate) fn set(&mut self, i: usize, word: TVMFFIAny) {
        assert!(i < self.len, "word {i} of {} written", self.len);
        self.buf[i].write(word);
    }

    /// The words and their count, for the safe-call entry: all of the buffer's, each written
    /// (a panic otherwise, before anything reads them).
    pub(crate) fn finished(&self) -> (*const TVMFFIAny, i32) {
        assert_eq!(self.len, self.buf.len(), "launch words written");
        (self.buf.as_ptr().cast::<TVMFFIAny>(), self.len as i32)
    }
}
