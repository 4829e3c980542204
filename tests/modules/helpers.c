/* The extern C function calls.scir declares with `nonzero_is_raised`: on failure it raises a
 * TVM-FFI error itself and returns non-zero. Written without the TVM-FFI headers (the one
 * function it needs is declared here) so the Rust-side tests build it anywhere. */
#include <stdint.h>

void TVMFFIErrorSetRaisedFromCStr(const char* kind, const char* message);

int32_t sc_checked(int64_t x) {
  if (x < 0) {
    TVMFFIErrorSetRaisedFromCStr("ValueError", "sc_checked: negative argument");
    return -1;
  }
  return 0;
}
