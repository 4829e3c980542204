/* Tensors: DLPack in and out (versioned and not), views, environment allocation. */
#include <pthread.h>

#include "common.h"

static int producer_deleted;
static int64_t shape2x3[2] = {2, 3};

static void managed_deleter(DLManagedTensor* self) {
  producer_deleted++;
  free(self);
}

static void versioned_deleter(DLManagedTensorVersioned* self) {
  producer_deleted++;
  free(self);
}

static float data[64] __attribute__((aligned(64)));

static DLManagedTensor* make_managed(int64_t* strides) {
  DLManagedTensor* m = calloc(1, sizeof(DLManagedTensor));
  m->dl_tensor.data = data;
  m->dl_tensor.device.device_type = kDLCPU;
  m->dl_tensor.device.device_id = 0;
  m->dl_tensor.ndim = 2;
  m->dl_tensor.dtype.code = kDLFloat;
  m->dl_tensor.dtype.bits = 32;
  m->dl_tensor.dtype.lanes = 1;
  m->dl_tensor.shape = shape2x3;
  m->dl_tensor.strides = strides;
  m->dl_tensor.byte_offset = 0;
  m->manager_ctx = (void*)0x77;
  m->deleter = managed_deleter;
  return m;
}

static DLManagedTensorVersioned* make_versioned(int64_t* strides, uint64_t flags) {
  DLManagedTensorVersioned* m = calloc(1, sizeof(DLManagedTensorVersioned));
  m->version.major = 1;
  m->version.minor = 1;
  m->dl_tensor = make_managed(strides)->dl_tensor; /* leaks a little, fine for a test */
  m->flags = flags;
  m->manager_ctx = (void*)0x78;
  m->deleter = versioned_deleter;
  return m;
}

static void print_dltensor(const char* what, const DLTensor* t) {
  printf("%s: data_is_buffer=%d offset_from_buffer=%ld device=(%d,%d) ndim=%d dtype=(%u,%u,%u) byte_offset=%llu shape=[",
         what, t->data == (void*)data, (long)((char*)t->data - (char*)data), t->device.device_type,
         t->device.device_id, t->ndim, t->dtype.code, t->dtype.bits, t->dtype.lanes,
         (unsigned long long)t->byte_offset);
  for (int i = 0; i < t->ndim; ++i) printf("%s%lld", i ? "," : "", (long long)t->shape[i]);
  printf("] strides=");
  if (t->strides == NULL) {
    printf("null");
  } else {
    printf("[");
    for (int i = 0; i < t->ndim; ++i) printf("%s%lld", i ? "," : "", (long long)t->strides[i]);
    printf("]");
  }
  printf("\n");
}

static void print_tensor_obj(const char* what, TVMFFIObjectHandle t) {
  printf("%s: type_index=%d strong=%u weak=%u\n", what, HDR(t)->type_index, strong_count(t),
         weak_count(t));
  print_dltensor(what, CELL(t, DLTensor));
}

/* A CPU allocator written in C, installed the same way in both runtimes. */
static int alloc_calls;
static void c_alloc_deleter(DLManagedTensorVersioned* self) {
  free(self->dl_tensor.data);
  free(self->dl_tensor.shape);
  free(self);
}

static int c_allocator(DLTensor* prototype, DLManagedTensorVersioned** out, void* error_ctx,
                       void (*set_error)(void* error_ctx, const char* kind, const char* message)) {
  alloc_calls++;
  if (prototype->device.device_type != kDLCPU) {
    set_error(error_ctx, "ValueError", "c_allocator only allocates on the CPU");
    return -1;
  }
  if (prototype->ndim == 7) {
    *out = NULL;
    return 0;
  }
  DLManagedTensorVersioned* m = calloc(1, sizeof(DLManagedTensorVersioned));
  m->version.major = 1;
  m->version.minor = 3;
  m->dl_tensor = *prototype;
  m->dl_tensor.shape = calloc(prototype->ndim + 1, sizeof(int64_t));
  size_t n = 1;
  for (int i = 0; i < prototype->ndim; ++i) {
    m->dl_tensor.shape[i] = prototype->shape[i];
    n *= (size_t)prototype->shape[i];
  }
  m->dl_tensor.strides = NULL;
  m->dl_tensor.byte_offset = 0;
  m->dl_tensor.data = calloc(n ? n : 1, (prototype->dtype.bits * prototype->dtype.lanes + 7) / 8);
  m->deleter = c_alloc_deleter;
  *out = m;
  return 0;
}

static int other_allocator(DLTensor* prototype, DLManagedTensorVersioned** out, void* error_ctx,
                           void (*set_error)(void* error_ctx, const char* kind, const char* message)) {
  (void)prototype;
  (void)out;
  (void)error_ctx;
  (void)set_error;
  return 5;
}

/* On a thread with no allocator of its own: what setting one reports as the previous one
 * (the global allocator counts), and an allocation after clearing it again. */
static void* thread_sets_allocator(void* arg) {
  (void)arg;
  DLPackManagedTensorAllocator previous = (DLPackManagedTensorAllocator)1;
  report("thread sets other", TVMFFIEnvSetDLPackManagedTensorAllocator(other_allocator, 0, &previous));
  printf("thread previous is c_allocator=%d null=%d\n", previous == c_allocator, previous == NULL);
  report("thread clears", TVMFFIEnvSetDLPackManagedTensorAllocator(NULL, 0, &previous));
  printf("thread previous is other=%d now c_allocator=%d\n", previous == other_allocator,
         TVMFFIEnvGetDLPackManagedTensorAllocator() == c_allocator);
  return NULL;
}

static void* thread_allocator_view(void* arg) {
  (void)arg;
  printf("other thread sees c_allocator=%d null=%d\n",
         TVMFFIEnvGetDLPackManagedTensorAllocator() == c_allocator,
         TVMFFIEnvGetDLPackManagedTensorAllocator() == NULL);
  return NULL;
}

int main(void) {
  /* Unversioned, no strides: compact strides are filled in, the shape is borrowed. */
  TVMFFIObjectHandle t = NULL;
  DLManagedTensor* m = make_managed(NULL);
  report("from dlpack", TVMFFITensorFromDLPack(m, 0, 0, &t));
  print_tensor_obj("from dlpack", t);
  printf("shape borrowed=%d\n", CELL(t, DLTensor)->shape == shape2x3);
  TVMFFIObjectIncRef(t);
  TVMFFIObjectDecRef(t);
  printf("producer deleted before release=%d\n", producer_deleted);

  /* Out again as DLPack, twice: each holds a reference until its deleter runs. */
  DLManagedTensor* out1 = NULL;
  DLManagedTensorVersioned* out2 = NULL;
  report("to dlpack", TVMFFITensorToDLPack(t, &out1));
  print_dltensor("to dlpack", &out1->dl_tensor);
  printf("refcount=%u manager_ctx is tensor=%d\n", strong_count(t), out1->manager_ctx == t);
  report("to dlpack versioned", TVMFFITensorToDLPackVersioned(t, &out2));
  print_dltensor("to dlpack versioned", &out2->dl_tensor);
  printf("version=%u.%u flags=%llu refcount=%u\n", out2->version.major, out2->version.minor,
         (unsigned long long)out2->flags, strong_count(t));
  TVMFFIObjectDecRef(t);
  printf("after tensor decref: producer deleted=%d\n", producer_deleted);
  out1->deleter(out1);
  printf("after first consumer: producer deleted=%d\n", producer_deleted);
  out2->deleter(out2);
  printf("after second consumer: producer deleted=%d\n", producer_deleted);

  /* With strides: kept as given. */
  static int64_t strides[2] = {1, 2};
  m = make_managed(strides);
  report("from dlpack strided", TVMFFITensorFromDLPack(m, 0, 0, &t));
  print_tensor_obj("strided", t);
  printf("strides borrowed=%d\n", CELL(t, DLTensor)->strides == strides);
  TVMFFIObjectDecRef(t);
  printf("producer deleted=%d\n", producer_deleted);

  /* Contiguity and alignment requirements. */
  m = make_managed(strides);
  report("non-contiguous with require_contiguous", TVMFFITensorFromDLPack(m, 0, 1, &t));
  printf("producer deleted after failure=%d\n", producer_deleted);
  static int64_t compact[2] = {3, 1};
  m->dl_tensor.strides = compact;
  report("contiguous strides with require_contiguous", TVMFFITensorFromDLPack(m, 64, 1, &t));
  TVMFFIObjectDecRef(t);
  m = make_managed(NULL);
  m->dl_tensor.byte_offset = 4;
  report("misaligned", TVMFFITensorFromDLPack(m, 64, 0, &t));
  report("aligned to 4", TVMFFITensorFromDLPack(m, 4, 0, &t));
  print_tensor_obj("byte offset kept", t);
  TVMFFIObjectDecRef(t);
  m = make_managed(NULL);
  m->dl_tensor.data = (char*)data + 8;
  report("misaligned data to 16", TVMFFITensorFromDLPack(m, 16, 1, &t));
  m->dl_tensor.device.device_type = kDLVulkan;
  report("opaque device misaligned data but offset 0", TVMFFITensorFromDLPack(m, 16, 1, &t));
  TVMFFIObjectDecRef(t);
  m = make_managed(NULL);
  m->dl_tensor.device.device_type = kDLVulkan;
  m->dl_tensor.byte_offset = 8;
  report("opaque device offset 8 to 16", TVMFFITensorFromDLPack(m, 16, 0, &t));
  free(m);
  static int64_t shape_with_zero[2] = {0, 3};
  static int64_t odd_strides[2] = {7, 5};
  m = make_managed(odd_strides);
  m->dl_tensor.shape = shape_with_zero;
  report("zero-size with odd strides, require_contiguous", TVMFFITensorFromDLPack(m, 0, 1, &t));
  TVMFFIObjectDecRef(t);
  static int64_t shape_with_one[3] = {2, 1, 3};
  static int64_t strides_with_one[3] = {3, 99, 1};
  m = make_managed(strides_with_one);
  m->dl_tensor.ndim = 3;
  m->dl_tensor.shape = shape_with_one;
  report("unit dim with any stride, require_contiguous", TVMFFITensorFromDLPack(m, 0, 1, &t));
  TVMFFIObjectDecRef(t);
  m = make_managed(NULL);
  m->dl_tensor.ndim = 0;
  report("scalar", TVMFFITensorFromDLPack(m, 0, 0, &t));
  print_tensor_obj("scalar", t);
  TVMFFIObjectDecRef(t);

  /* Versioned. */
  producer_deleted = 0;
  DLManagedTensorVersioned* v = make_versioned(NULL, DLPACK_FLAG_BITMASK_READ_ONLY);
  report("from dlpack versioned", TVMFFITensorFromDLPackVersioned(v, 64, 1, &t));
  print_tensor_obj("versioned", t);
  report("to unversioned", TVMFFITensorToDLPack(t, &out1));
  TVMFFIObjectDecRef(t);
  printf("producer deleted while exported=%d\n", producer_deleted);
  out1->deleter(out1);
  printf("producer deleted after export released=%d\n", producer_deleted);
  v = make_versioned(NULL, DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED);
  report("subbyte padded", TVMFFITensorFromDLPackVersioned(v, 0, 0, &t));
  v->dl_tensor.byte_offset = 2;
  report("subbyte padded and misaligned", TVMFFITensorFromDLPackVersioned(v, 8, 0, &t));
  v->dl_tensor.strides = strides;
  v->dl_tensor.byte_offset = 0;
  report("subbyte padded and non-contiguous", TVMFFITensorFromDLPackVersioned(v, 8, 1, &t));
  printf("producer deleted after failures=%d\n", producer_deleted);
  free(v);
  v = make_versioned(NULL, DLPACK_FLAG_BITMASK_IS_COPIED);
  report("copied flag", TVMFFITensorFromDLPackVersioned(v, 0, 0, &t));
  TVMFFIObjectDecRef(t);

  /* Views share the source's data and keep the source alive. */
  m = make_managed(NULL);
  TVMFFIObjectHandle source = NULL;
  TVMFFITensorFromDLPack(m, 0, 0, &source);
  producer_deleted = 0;
  DLTensor proto = *CELL(source, DLTensor);
  int64_t view_shape[1] = {3};
  int64_t view_strides[1] = {2};
  proto.ndim = 1;
  proto.shape = view_shape;
  proto.strides = view_strides;
  proto.data = (char*)data + 4;
  proto.byte_offset = 8;
  proto.dtype.bits = 16;
  TVMFFIObjectHandle view = NULL;
  report("unsafe view", TVMFFITensorCreateUnsafeView(source, &proto, &view));
  print_tensor_obj("view", view);
  printf("shape copied=%d strides copied=%d source refcount=%u\n",
         CELL(view, DLTensor)->shape != view_shape, CELL(view, DLTensor)->strides != view_strides,
         strong_count(source));
  TVMFFIObjectDecRef(source);
  printf("producer deleted while view alive=%d\n", producer_deleted);
  TVMFFIObjectDecRef(view);
  printf("producer deleted after view released=%d\n", producer_deleted);
  m = make_managed(NULL);
  TVMFFITensorFromDLPack(m, 0, 0, &source);
  proto = *CELL(source, DLTensor);
  proto.ndim = 0;
  proto.strides = view_strides;
  report("scalar view", TVMFFITensorCreateUnsafeView(source, &proto, &view));
  print_tensor_obj("scalar view", view);
  TVMFFIObjectDecRef(view);
  TVMFFIObjectDecRef(source);

  /* A view needs strides. */
  m = make_managed(NULL);
  TVMFFITensorFromDLPack(m, 0, 0, &source);
  proto = *CELL(source, DLTensor);
  proto.strides = NULL;
  view = NULL;
  report("view without strides", TVMFFITensorCreateUnsafeView(source, &proto, &view));
  printf("view untouched=%d source refcount=%u\n", view == NULL, strong_count(source));
  TVMFFIObjectDecRef(source);

  /* The environment allocator. */
  printf("allocator initially null=%d\n", TVMFFIEnvGetDLPackManagedTensorAllocator() == NULL);
  {
    int64_t none_shape[1] = {3};
    DLTensor none_proto;
    memset(&none_proto, 0, sizeof(none_proto));
    none_proto.device.device_type = kDLCPU;
    none_proto.ndim = 1;
    none_proto.shape = none_shape;
    none_proto.dtype.code = kDLFloat;
    none_proto.dtype.bits = 32;
    none_proto.dtype.lanes = 1;
    TVMFFIObjectHandle none_out = NULL;
    report("env alloc without an allocator", TVMFFIEnvTensorAlloc(&none_proto, &none_out));
    printf("out untouched=%d\n", none_out == NULL);
  }
  DLPackManagedTensorAllocator previous = (DLPackManagedTensorAllocator)1;
  report("set allocator", TVMFFIEnvSetDLPackManagedTensorAllocator(c_allocator, 0, &previous));
  printf("previous null=%d current is c_allocator=%d\n", previous == NULL,
         TVMFFIEnvGetDLPackManagedTensorAllocator() == c_allocator);
  pthread_t thread;
  pthread_create(&thread, NULL, thread_allocator_view, NULL);
  pthread_join(thread, NULL);
  int64_t alloc_shape[3] = {4, 5, 6};
  DLTensor prototype;
  memset(&prototype, 0, sizeof(prototype));
  prototype.device.device_type = kDLCPU;
  prototype.ndim = 3;
  prototype.shape = alloc_shape;
  prototype.dtype.code = kDLFloat;
  prototype.dtype.bits = 32;
  prototype.dtype.lanes = 1;
  TVMFFIObjectHandle allocated = NULL;
  report("env alloc", TVMFFIEnvTensorAlloc(&prototype, &allocated));
  DLTensor* at = CELL(allocated, DLTensor);
  printf("allocated: type_index=%d ndim=%d shape=[%lld,%lld,%lld] strides=[%lld,%lld,%lld] dtype=(%u,%u,%u) data_nonnull=%d refcount=%u\n",
         HDR(allocated)->type_index, at->ndim, (long long)at->shape[0], (long long)at->shape[1],
         (long long)at->shape[2], (long long)at->strides[0], (long long)at->strides[1],
         (long long)at->strides[2], at->dtype.code, at->dtype.bits, at->dtype.lanes,
         at->data != NULL, strong_count(allocated));
  TVMFFIObjectDecRef(allocated);
  prototype.ndim = 0;
  report("env alloc scalar", TVMFFIEnvTensorAlloc(&prototype, &allocated));
  TVMFFIObjectDecRef(allocated);
  prototype.device.device_type = kDLCUDA;
  report("env alloc error from allocator", TVMFFIEnvTensorAlloc(&prototype, &allocated));
  prototype.device.device_type = kDLCPU;
  prototype.ndim = 7;
  report("env alloc null tensor", TVMFFIEnvTensorAlloc(&prototype, &allocated));
  printf("alloc calls=%d\n", alloc_calls);
  report("set other allocator globally", TVMFFIEnvSetDLPackManagedTensorAllocator(other_allocator, 1, &previous));
  printf("previous is c_allocator=%d\n", previous == c_allocator);
  prototype.ndim = 1;
  report("env alloc other", TVMFFIEnvTensorAlloc(&prototype, &allocated));
  pthread_create(&thread, NULL, thread_allocator_view, NULL);
  pthread_join(thread, NULL);
  report("set c_allocator globally", TVMFFIEnvSetDLPackManagedTensorAllocator(c_allocator, 1, NULL));
  pthread_create(&thread, NULL, thread_allocator_view, NULL);
  pthread_join(thread, NULL);
  report("clear thread-local", TVMFFIEnvSetDLPackManagedTensorAllocator(NULL, 0, &previous));
  printf("previous is c_allocator=%d falls back to global=%d\n", previous == c_allocator,
         TVMFFIEnvGetDLPackManagedTensorAllocator() == c_allocator);
  pthread_create(&thread, NULL, thread_sets_allocator, NULL);
  pthread_join(thread, NULL);
  report("set none globally", TVMFFIEnvSetDLPackManagedTensorAllocator(NULL, 1, &previous));
  printf("previous is c_allocator=%d now null=%d\n", previous == c_allocator,
         TVMFFIEnvGetDLPackManagedTensorAllocator() == NULL);
  prototype.ndim = 1;
  allocated = NULL;
  report("env alloc after clearing", TVMFFIEnvTensorAlloc(&prototype, &allocated));
  printf("out untouched=%d\n", allocated == NULL);
  return 0;
}
