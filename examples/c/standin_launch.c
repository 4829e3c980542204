/* A stand-in for the launch function `examples/ir/launcher.scir` calls, for trying the
 * launcher on a machine without a GPU: it prints what it was given instead of launching a
 * kernel. See docs/cli.md:
 *
 *   cc -shared -fPIC examples/c/standin_launch.c -o libstandin.so
 *   safecall run --preload ./libstandin.so examples/ir/launcher.scir matmul \
 *       float16[256,64]@cuda:0 float16[64,384]@cuda:0 float32[384]@cuda:0 float32[256,384]@cuda:0
 */
#include <stdint.h>
#include <stdio.h>

int matmul_kernel_launch(void* a, void* b, void* bias, void* c, int64_t m, int64_t n, int64_t k,
                         int32_t grid_x, int32_t grid_y, void* stream) {
  (void)a, (void)b, (void)bias, (void)c;
  printf("matmul_kernel_launch: m=%lld n=%lld k=%lld grid=(%d, %d) stream=%p\n", (long long)m,
         (long long)n, (long long)k, grid_x, grid_y, stream);
  fflush(stdout);
  return 0;
}
