// The scan kernels of ptx/amg.cu on the CPU, 256 real threads per block (run.sh).
#include "amg.cu"
#include <cstdio>
#include <vector>
#include <random>
thread_local Dim blockIdx, threadIdx; Dim blockDim, gridDim;
std::barrier<>* bar; unsigned long long shfl_slots[256];
int main() {
    int status = 0;
    std::mt19937 rng(7);
    for (size_t n : {0ul, 1ul, 255ul, 2047ul, 2048ul, 2049ul, 300001ul, 614401ul}) {
        std::vector<unsigned> c(n + 1), ref(n + 1);
        for (size_t i = 0; i < n; ++i) c[i] = rng() % 100;
        unsigned long long run = 0;
        for (size_t i = 0; i < n; ++i) { ref[i] = run; run += c[i]; } ref[n] = run;
        unsigned tiles = std::max<size_t>(1, (n + 2047) / 2048);
        std::vector<unsigned long long> partials(tiles); unsigned long long total = 0;
        launch_blocks(tiles, [&] { amg_scan_tiles_u32(n, c.data(), partials.data()); });
        launch_blocks(1, [&] { amg_scan_partials_u32(tiles, partials.data(), &total); });
        launch_blocks(tiles, [&] { amg_scan_apply_u32(n, c.data(), partials.data(), &total, c.data()); });
        const bool same = c == ref && total == run;
        printf("amg emulation: scan of %zu counts (%u tiles) %s\n", n, tiles, same ? "equals the host" : "DIFFERS");
        if (!same) status = 1;
    }
    return status;
}
