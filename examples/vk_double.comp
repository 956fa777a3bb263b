#version 450
// Doubles every element and adds a specialization constant: small, but a real pipeline.
layout(local_size_x = 64) in;
layout(constant_id = 0) const uint ADD = 1;
layout(std430, binding = 0) buffer Data { uint v[]; };
void main() {
    uint i = gl_GlobalInvocationID.x;
    v[i] = v[i] * 2u + ADD;
}
