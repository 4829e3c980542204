/* Errors: the thread-local raised error, error objects, cause chains, backtrace updates. */
#include <pthread.h>

#include "common.h"

static void* other_thread(void* arg) {
  (void)arg;
  /* The main thread's raised error is not visible here. */
  print_raised("other thread before raise");
  TVMFFIErrorSetRaisedFromCStr("KeyError", "raised on the other thread");
  print_raised("other thread after raise");
  TVMFFIErrorSetRaisedFromCStr("IndexError", "left raised when the thread exits");
  return NULL;
}

static void update(void* err, const char* text, int mode) {
  TVMFFIByteArray bt = ba(text);
  CELL(err, TVMFFIErrorCell)->update_backtrace(err, &bt, mode);
  TVMFFIErrorCell* cell = CELL(err, TVMFFIErrorCell);
  printf("backtrace after mode %d: ", mode);
  print_bytes(cell->backtrace.data, cell->backtrace.size);
  printf("\n");
}

int main(void) {
  print_raised("nothing raised");

  TVMFFIErrorSetRaisedFromCStr("ValueError", "bad value");
  print_raised("from cstr");
  print_raised("moved out already");

  TVMFFIErrorSetRaisedFromCStr("", "");
  print_raised("empty kind and message");

  TVMFFIErrorSetRaisedFromCStr("TypeError", "first");
  TVMFFIErrorSetRaisedFromCStr("AttributeError", "second replaces first");
  print_raised("raised twice");

  const char* parts[] = {"argument ", NULL, "'x'", "", " is wrong"};
  TVMFFIErrorSetRaisedFromCStrParts("TypeError", parts, 5);
  print_raised("from parts");
  TVMFFIErrorSetRaisedFromCStrParts("RuntimeError", parts, 0);
  print_raised("zero parts");

  /* Error objects. */
  TVMFFIByteArray kind = ba("RuntimeError");
  TVMFFIByteArray message = ba("something failed");
  TVMFFIByteArray backtrace = ba("  File \"a.py\", line 1, in f\n");
  TVMFFIObjectHandle err = NULL;
  printf("create -> %d\n", TVMFFIErrorCreate(&kind, &message, &backtrace, &err));
  printf("created: ");
  print_error_obj(err);
  TVMFFIErrorCell* cell = CELL(err, TVMFFIErrorCell);
  printf(" backtrace=");
  print_bytes(cell->backtrace.data, cell->backtrace.size);
  printf(" cause=%d extra=%d refcount=%u weak=%u\n", cell->cause_chain != NULL,
         cell->extra_context != NULL, strong_count(err), weak_count(err));
  update(err, "  File \"b.py\", line 2, in g\n", kTVMFFIBacktraceUpdateModeAppend);
  update(err, "replaced\n", kTVMFFIBacktraceUpdateModeReplace);
  update(err, "", kTVMFFIBacktraceUpdateModeReplace);
  update(err, "", kTVMFFIBacktraceUpdateModeAppend);

  /* Raising an error object keeps the caller's reference and adds one in TLS. */
  TVMFFIErrorSetRaised(err);
  printf("refcount while raised=%u\n", strong_count(err));
  TVMFFIObjectHandle moved = NULL;
  TVMFFIErrorMoveFromRaised(&moved);
  printf("moved is same object=%d refcount=%u\n", moved == err, strong_count(err));
  TVMFFIObjectDecRef(moved);

  /* Cause chain and extra context: borrowed, retained by the new error. */
  TVMFFIByteArray kind2 = ba("ValueError");
  TVMFFIByteArray message2 = ba("outer");
  TVMFFIByteArray empty = ba("");
  TVMFFIObjectHandle context = NULL;
  static int dummy;
  TVMFFIObjectCreateOpaque(&dummy, kTVMFFIOpaquePyObject, NULL, &context);
  TVMFFIObjectHandle outer = NULL;
  printf("create with cause -> %d\n",
         TVMFFIErrorCreateWithCauseAndExtraContext(&kind2, &message2, &empty, err, context, &outer));
  TVMFFIErrorCell* outer_cell = CELL(outer, TVMFFIErrorCell);
  printf("outer: ");
  print_error_obj(outer);
  printf(" cause_is_err=%d extra_is_context=%d err_refcount=%u context_refcount=%u bt_size=%zu\n",
         outer_cell->cause_chain == err, outer_cell->extra_context == context, strong_count(err),
         strong_count(context), outer_cell->backtrace.size);
  TVMFFIObjectDecRef(outer);
  printf("after outer freed: err_refcount=%u context_refcount=%u\n", strong_count(err),
         strong_count(context));
  TVMFFIObjectHandle plain = NULL;
  printf("create without cause -> %d\n",
         TVMFFIErrorCreateWithCauseAndExtraContext(&kind2, &message2, &empty, NULL, NULL, &plain));
  printf("plain: cause=%d extra=%d\n", CELL(plain, TVMFFIErrorCell)->cause_chain != NULL,
         CELL(plain, TVMFFIErrorCell)->extra_context != NULL);
  TVMFFIObjectDecRef(plain);
  TVMFFIObjectDecRef(context);

  /* Errors stay on their thread. */
  TVMFFIErrorSetRaisedFromCStr("ValueError", "raised on the main thread");
  pthread_t thread;
  pthread_create(&thread, NULL, other_thread, NULL);
  pthread_join(thread, NULL);
  print_raised("main thread after join");

  /* An error raised from a thread that exits is released with the thread. */
  TVMFFIErrorSetRaised(err);
  printf("err refcount while raised=%u\n", strong_count(err));
  TVMFFIObjectHandle again = NULL;
  TVMFFIErrorMoveFromRaised(&again);
  TVMFFIObjectDecRef(again);
  printf("err refcount after move+decref=%u\n", strong_count(err));
  TVMFFIObjectDecRef(err);

  /* TVMFFIBacktrace with a frame given: the first line names that frame. */
  const TVMFFIByteArray* bt = TVMFFIBacktrace("my_file.c", 42, "my_func", 0);
  const char* nl = memchr(bt->data, '\n', bt->size);
  printf("backtrace first line: ");
  print_bytes(bt->data, nl ? (size_t)(nl - bt->data + 1) : bt->size);
  printf("\n");
  return 0;
}
