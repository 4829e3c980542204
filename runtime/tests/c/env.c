/* Environment: per-thread streams, signal checks, environment C API and module symbols. */
#include <pthread.h>

#include "common.h"

static void* stream_thread(void* arg) {
  (void)arg;
  printf("other thread: cuda:0 stream null=%d\n", TVMFFIEnvGetStream(kDLCUDA, 0) == NULL);
  TVMFFIStreamHandle original = (void*)1;
  report("other thread set", TVMFFIEnvSetStream(kDLCUDA, 0, (void*)0xbeef, &original));
  printf("other thread: original null=%d now beef=%d\n", original == NULL,
         TVMFFIEnvGetStream(kDLCUDA, 0) == (void*)0xbeef);
  return NULL;
}

static int signal_calls;
static int signal_result;
static int gil_ensures;
static int gil_releases;
static int fake_check_signals(void) {
  signal_calls++;
  if (signal_result != 0) TVMFFIErrorSetRaisedFromCStr("KeyboardInterrupt", "");
  return signal_result;
}
static void* fake_gil_ensure(void) {
  gil_ensures++;
  return (void*)0x1;
}
static void fake_gil_release(void* state) {
  (void)state;
  gil_releases++;
}

int main(void) {
  printf("unset stream null=%d\n", TVMFFIEnvGetStream(kDLCUDA, 0) == NULL);
  printf("unset large device null=%d\n", TVMFFIEnvGetStream(100, 1000) == NULL);
  TVMFFIStreamHandle original = (void*)1;
  report("set cuda:0", TVMFFIEnvSetStream(kDLCUDA, 0, (void*)0x1000, &original));
  printf("original null=%d\n", original == NULL);
  report("set cuda:1 without out", TVMFFIEnvSetStream(kDLCUDA, 1, (void*)0x1001, NULL));
  report("set rocm:0", TVMFFIEnvSetStream(kDLROCM, 0, (void*)0x2000, NULL));
  printf("cuda:0=%p cuda:1=%p cuda:2=%p rocm:0=%p cpu:0=%p\n", TVMFFIEnvGetStream(kDLCUDA, 0),
         TVMFFIEnvGetStream(kDLCUDA, 1), TVMFFIEnvGetStream(kDLCUDA, 2),
         TVMFFIEnvGetStream(kDLROCM, 0), TVMFFIEnvGetStream(kDLCPU, 0));
  report("replace cuda:0", TVMFFIEnvSetStream(kDLCUDA, 0, (void*)0x3000, &original));
  printf("original=%p now=%p\n", original, TVMFFIEnvGetStream(kDLCUDA, 0));
  pthread_t thread;
  pthread_create(&thread, NULL, stream_thread, NULL);
  pthread_join(thread, NULL);
  printf("main thread cuda:0 unchanged=%p\n", TVMFFIEnvGetStream(kDLCUDA, 0));
  report("reset cuda:0 to null", TVMFFIEnvSetStream(kDLCUDA, 0, NULL, &original));
  printf("original=%p now null=%d\n", original, TVMFFIEnvGetStream(kDLCUDA, 0) == NULL);

  printf("check signals with nothing registered -> %d\n", TVMFFIEnvCheckSignals());
  report("register unknown capi", TVMFFIEnvRegisterCAPI("NotAFunction", (void*)fake_check_signals));
  report("register gil ensure", TVMFFIEnvRegisterCAPI("PyGILState_Ensure", (void*)fake_gil_ensure));
  report("register gil release", TVMFFIEnvRegisterCAPI("PyGILState_Release", (void*)fake_gil_release));
  report("register check signals", TVMFFIEnvRegisterCAPI("PyErr_CheckSignals", (void*)fake_check_signals));
  printf("check signals -> %d\n", TVMFFIEnvCheckSignals());
  printf("signal calls=%d gil ensures=%d releases=%d\n", signal_calls, gil_ensures, gil_releases);
  signal_result = -1;
  printf("check signals with a pending signal -> %d\n", TVMFFIEnvCheckSignals());
  print_raised("pending signal");
  signal_result = 0;
  report("unregister check signals", TVMFFIEnvRegisterCAPI("PyErr_CheckSignals", NULL));
  printf("check signals after unregister -> %d calls=%d\n", TVMFFIEnvCheckSignals(), signal_calls);

  static int ctx_value;
  report("register context symbol", TVMFFIEnvModRegisterContextSymbol("__safecall_test_ctx", &ctx_value));
  report("register context symbol again", TVMFFIEnvModRegisterContextSymbol("__safecall_test_ctx", &ctx_value));
  report("register system lib symbol", TVMFFIEnvModRegisterSystemLibSymbol("__tvm_ffi_safecall_test", (void*)fake_check_signals));
  report("register system lib symbol same", TVMFFIEnvModRegisterSystemLibSymbol("__tvm_ffi_safecall_test", (void*)fake_check_signals));
  return 0;
}
