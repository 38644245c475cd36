// Direct CUDA-runtime reference for pinned H2D/D2H bandwidth, outside torch.
// Method matches xfertop.bench.method: pinned host buffer (cudaHostAlloc) and device buffer allocated and
// written before timing; warm-up copies; each sample = COUNT cudaMemcpyAsync on one non-default stream
// between two events; GB = 1e9 bytes. Prints one JSON line per direction:
//   {"direction":"h2d","size_bytes":268435456,"count":8,"gb_per_s":[...]}
// Usage: h2d_ref SIZE_BYTES COUNT SAMPLES [DEVICE]
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#define CHECK(call)                                                                              \
    do {                                                                                         \
        cudaError_t err_ = (call);                                                               \
        if (err_ != cudaSuccess) {                                                               \
            std::fprintf(stderr, "h2d_ref: %s failed: %s\n", #call, cudaGetErrorString(err_));    \
            std::exit(2);                                                                        \
        }                                                                                        \
    } while (0)

static void measure(const char* direction, void* dst, const void* src, size_t size, int count, int samples,
                    cudaMemcpyKind kind, cudaStream_t stream) {
    cudaEvent_t start, end;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&end));
    for (int i = 0; i < 4; ++i) CHECK(cudaMemcpyAsync(dst, src, size, kind, stream));  // warm-up
    CHECK(cudaStreamSynchronize(stream));
    std::printf("{\"direction\":\"%s\",\"size_bytes\":%zu,\"count\":%d,\"gb_per_s\":[", direction, size, count);
    for (int s = 0; s < samples; ++s) {
        CHECK(cudaEventRecord(start, stream));
        for (int i = 0; i < count; ++i) CHECK(cudaMemcpyAsync(dst, src, size, kind, stream));
        CHECK(cudaEventRecord(end, stream));
        CHECK(cudaEventSynchronize(end));
        float ms = 0.0f;
        CHECK(cudaEventElapsedTime(&ms, start, end));
        std::printf("%s%.4f", s ? "," : "", (double)size * count / (ms / 1e3) / 1e9);
    }
    std::printf("]}\n");
    std::fflush(stdout);
    CHECK(cudaEventDestroy(start));
    CHECK(cudaEventDestroy(end));
}

int main(int argc, char** argv) {
    if (argc < 4) {
        std::fprintf(stderr, "usage: %s SIZE_BYTES COUNT SAMPLES [DEVICE]\n", argv[0]);
        return 2;
    }
    size_t size = std::strtoull(argv[1], nullptr, 10);
    int count = std::atoi(argv[2]);
    int samples = std::atoi(argv[3]);
    int device = argc > 4 ? std::atoi(argv[4]) : 0;
    CHECK(cudaSetDevice(device));
    void *host = nullptr, *dev = nullptr;
    CHECK(cudaHostAlloc(&host, size, cudaHostAllocDefault));
    CHECK(cudaMalloc(&dev, size));
    std::memset(host, 0x5a, size);  // touch every page before timing
    CHECK(cudaMemset(dev, 0xa5, size));
    cudaStream_t stream;
    CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    CHECK(cudaDeviceSynchronize());
    measure("h2d", dev, host, size, count, samples, cudaMemcpyHostToDevice, stream);
    measure("d2h", host, dev, size, count, samples, cudaMemcpyDeviceToHost, stream);
    CHECK(cudaStreamDestroy(stream));
    CHECK(cudaFree(dev));
    CHECK(cudaFreeHost(host));
    return 0;
}
