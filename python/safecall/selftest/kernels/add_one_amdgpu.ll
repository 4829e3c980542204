target triple = "amdgcn-amd-amdhsa"

declare i32 @llvm.amdgcn.workitem.id.x()
declare i32 @llvm.amdgcn.workgroup.id.x()

; y[i] = x[i] + 1 for i = 256 * workgroup + thread < n (blocks of 256 threads).
define amdgpu_kernel void @add_one(ptr addrspace(1) %x, ptr addrspace(1) %y, i32 %n) #0 {
entry:
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %wg = call i32 @llvm.amdgcn.workgroup.id.x()
  %base = mul i32 %wg, 256
  %i = add i32 %base, %tid
  %in = icmp slt i32 %i, %n
  br i1 %in, label %body, label %done
body:
  %idx = sext i32 %i to i64
  %px = getelementptr float, ptr addrspace(1) %x, i64 %idx
  %v = load float, ptr addrspace(1) %px, align 4
  %w = fadd float %v, 1.0
  %py = getelementptr float, ptr addrspace(1) %y, i64 %idx
  store float %w, ptr addrspace(1) %py, align 4
  br label %done
done:
  ret void
}

attributes #0 = { "amdgpu-flat-work-group-size"="1,256" }
