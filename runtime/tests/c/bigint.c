/* Arbitrary-precision integers: normalization to Int, BigInt objects and their words. */
#include "common.h"

static void from_words(const char* what, const int64_t* words, size_t n_bytes) {
  TVMFFIByteArray input = {(const char*)words, n_bytes};
  TVMFFIAny out;
  memset(&out, 0x5a, sizeof(out));
  int ret = TVMFFIBigIntFromByteArray(&input, &out);
  printf("%s -> %d", what, ret);
  if (ret != 0) {
    printf(" out_type=%d\n", out.type_index);
    print_raised(what);
    return;
  }
  printf(" type_index=%d pad=%u", out.type_index, out.zero_padding);
  TVMFFIByteArray content = TVMFFIBigIntGetContentByteArray(&out);
  printf(" words=%zu [", content.size / 8);
  for (size_t i = 0; i < content.size / 8; ++i) {
    printf("%s%lld", i ? "," : "", (long long)((const int64_t*)content.data)[i]);
  }
  printf("]");
  if (out.type_index == kTVMFFIInt) {
    printf(" borrowed_from_any=%d", content.data == (const char*)&out.v_int64);
  } else {
    printf(" refcount=%u", strong_count(out.v_obj));
  }
  printf("\n");
  release_any(&out);
}

int main(void) {
  int64_t words[4] = {0, 0, 0, 0};
  from_words("empty", words, 0);
  words[0] = 42;
  from_words("one word", words, 8);
  words[0] = -7;
  words[1] = -1;
  from_words("redundant sign word", words, 16);
  words[0] = -7;
  words[1] = 0;
  from_words("positive needs a second word", words, 16);
  words[0] = 5;
  words[1] = 0;
  words[2] = 0;
  from_words("two redundant zero words", words, 24);
  words[0] = 1;
  words[1] = 2;
  words[2] = -1;
  words[3] = -1;
  from_words("three words after trimming", words, 32);
  from_words("not whole words", words, 12);
  TVMFFIAny plain;
  memset(&plain, 0, sizeof(plain));
  plain.type_index = kTVMFFIInt;
  plain.v_int64 = -123;
  TVMFFIByteArray content = TVMFFIBigIntGetContentByteArray(&plain);
  printf("content of Int -123: size=%zu value=%lld\n", content.size, (long long)*(const int64_t*)content.data);
  TVMFFIByteArray key = ba("ffi.BigInt");
  int32_t index = 0;
  report("BigInt key", TVMFFITypeKeyToIndex(&key, &index));
  printf("index=%d\n", index);
  return 0;
}
