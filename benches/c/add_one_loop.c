/* y = x + 1 over n floats: the C baseline of the CPU-loop benchmark in benches/backends.rs. */
void add_one(const float* x, float* y, long n) {
  for (long i = 0; i < n; i++) y[i] = x[i] + 1.0f;
}
