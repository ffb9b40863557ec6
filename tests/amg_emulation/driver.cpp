// The host driver of the CPU emulation of the setup kernels (run.sh says how it runs).
#include "amg.cu"
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>
thread_local Dim blockIdx, threadIdx;
Dim blockDim, gridDim;
std::barrier<>* bar;  // the scan's only: the per-row kernels never synchronize
unsigned long long shfl_slots[256];
typedef std::vector<unsigned> VU;
typedef std::vector<double> VF;
static std::mt19937 rng(12345);
// Runs every thread of a grid of `grid` blocks of 256 in a shuffled order.
template <class F> void launch(unsigned grid, F f) {
    std::vector<std::pair<unsigned, unsigned>> t;
    for (unsigned b = 0; b < grid; ++b) for (unsigned x = 0; x < 256; ++x) t.push_back({b, x});
    std::shuffle(t.begin(), t.end(), rng);
    gridDim.x = grid; blockDim.x = 256;
    for (auto& p : t) { blockIdx.x = p.first; threadIdx.x = p.second; f(); }
}
unsigned grid_of(size_t n) { size_t g = (n + 255) / 256; return (unsigned)std::max<size_t>(1, std::min<size_t>(g, 3)); }
// exclusive scan in place of counts (n+1), returns total
size_t scan(VU& c) { unsigned long long run = 0; for (size_t i = 0; i + 1 < c.size(); ++i) { unsigned v = c[i]; c[i] = run; run += v; } c.back() = run; return run; }
std::map<std::string, std::vector<std::string>> read(const char* path) {
    std::map<std::string, std::vector<std::string>> m; std::ifstream f(path); std::string line;
    while (std::getline(f, line)) { std::istringstream s(line); std::string name; size_t n; s >> name >> n; std::vector<std::string> v(n); for (auto& x : v) s >> x; m[name] = v; }
    return m;
}
VU U(const std::vector<std::string>& v) { VU o; for (auto& x : v) o.push_back(std::stoull(x)); return o; }
VF F(const std::vector<std::string>& v) { VF o; for (auto& x : v) { uint64_t b = std::stoull(x, 0, 16); double d; memcpy(&d, &b, 8); o.push_back(d); } return o; }
struct Csr { size_t nrows, ncols; VU off, cols; VF vals; };
std::ostringstream out;
void wu(const char* n, const VU& v) { out << n << " " << v.size(); for (auto x : v) out << " " << x; out << "\n"; }
void wf(const char* n, const VF& v) { out << n << " " << v.size(); char b[32]; for (auto x : v) { uint64_t u; memcpy(&u, &x, 8); snprintf(b, 32, " %016llx", (unsigned long long)u); out << b; } out << "\n"; }
void wcsr(std::string n, const Csr& a) { wu((n + ".dims").c_str(), VU{(unsigned)a.nrows, (unsigned)a.ncols}); wu((n + ".off").c_str(), a.off); wu((n + ".cols").c_str(), a.cols); wf((n + ".vals").c_str(), a.vals); }
Csr transpose(const Csr& a) {
    size_t nnz = a.cols.size(); VU off(a.ncols + 1, 0), cur(a.ncols + 1, 0), tc(nnz); VF tv(nnz);
    launch(grid_of(nnz), [&] { amg_count_columns_u32(nnz, a.cols.data(), off.data()); });
    scan(off);
    launch(grid_of(a.nrows), [&] { amg_transpose_fill_f64(a.nrows, a.off.data(), a.cols.data(), a.vals.data(), off.data(), cur.data(), tc.data(), tv.data()); });
    launch(grid_of(a.ncols), [&] { amg_sort_rows_f64(a.ncols, off.data(), tc.data(), tv.data()); });
    launch_blocks(3, [&] { amg_sort_long_rows_f64(a.ncols, off.data(), tc.data(), tv.data()); });
    return Csr{a.ncols, a.nrows, off, tc, tv};
}
// C = A B as device_setup.rs runs it, with groups of one thread: the shared-memory count
// (16 slots a row: longer rows go to the global passes), the global passes for the rows it
// did not fit, and the shared-memory numeric pass.
Csr spgemm(const Csr& a, const Csr& b) {
    size_t m = a.nrows; VU need(m + 1, 0), off(m + 1, 0); unsigned too = 0;
    launch(grid_of(m), [&] { amg_spgemm_count_shared_u32(m, 1, b.ncols, a.off.data(), a.cols.data(), b.off.data(), b.cols.data(), off.data(), need.data(), &too); });
    if (too) abort();
    size_t slots = scan(need); VU table(slots, 0xffffffffu);
    if (slots) launch(grid_of(m), [&] { amg_spgemm_symbolic_u32(m, a.off.data(), a.cols.data(), b.off.data(), b.cols.data(), need.data(), table.data(), off.data()); });
    size_t nnz = scan(off); VU cols(nnz); VF vals(nnz);
    if (slots) {
        launch(grid_of(m), [&] { amg_spgemm_columns_u32(m, need.data(), table.data(), off.data(), cols.data()); });
        launch(grid_of(m), [&] { amg_spgemm_numeric_f64(m, need.data(), a.off.data(), a.cols.data(), a.vals.data(), b.off.data(), b.cols.data(), b.vals.data(), off.data(), cols.data(), vals.data()); });
    }
    launch(grid_of(m), [&] { amg_spgemm_numeric_shared_f64(m, 1, need.data(), a.off.data(), a.cols.data(), a.vals.data(), b.off.data(), b.cols.data(), b.vals.data(), off.data(), cols.data(), vals.data()); });
    return Csr{m, b.ncols, off, cols, vals};
}
int main(int argc, char** argv) {
    auto in = read(argv[1]);
    unsigned bs = U(in["bs"])[0]; double theta = F(in["theta"])[0], rho = F(in["rho"])[0];
    VU dims = U(in["A.dims"]);
    Csr a{dims[0], dims[1], U(in["A.off"]), U(in["A.cols"]), F(in["A.vals"])};
    size_t n = a.nrows, nodes = n / bs;
    VF diag(nodes), dinv(n);
    if (bs == 1) launch(grid_of(n), [&] { amg_diagonal_f64(n, a.off.data(), a.cols.data(), a.vals.data(), diag.data(), dinv.data()); });
    else launch(grid_of(nodes), [&] { amg_node_diagonal_f64(nodes, bs, a.off.data(), a.cols.data(), a.vals.data(), diag.data()); });
    VU soff(nodes + 1, 0);
    if (bs == 1) launch(grid_of(nodes), [&] { amg_strength_count_f64(nodes, a.off.data(), a.cols.data(), a.vals.data(), diag.data(), theta, soff.data()); });
    else launch(grid_of(nodes), [&] { amg_node_strength_count_f64(nodes, bs, a.off.data(), a.cols.data(), a.vals.data(), diag.data(), theta, soff.data()); });
    size_t snnz = scan(soff); VU scols(snnz);
    if (bs == 1) launch(grid_of(nodes), [&] { amg_strength_fill_f64(nodes, a.off.data(), a.cols.data(), a.vals.data(), diag.data(), theta, soff.data(), scols.data()); });
    else launch(grid_of(nodes), [&] { amg_node_strength_fill_f64(nodes, bs, a.off.data(), a.cols.data(), a.vals.data(), diag.data(), theta, soff.data(), scols.data()); });
    wu("S.off", soff); wu("S.cols", scols);
    // MIS-2
    VU state(nodes), roots(nodes + 1, 0); std::vector<unsigned long long> m1(nodes), m2(nodes);
    launch(grid_of(nodes), [&] { amg_mis2_init_u32(nodes, state.data()); });
    for (size_t r = 0; r < nodes; ++r) {
        unsigned flag = 0;
        launch(grid_of(nodes), [&] { amg_mis2_max1_u32(nodes, soff.data(), scols.data(), state.data(), m1.data()); });
        launch(grid_of(nodes), [&] { amg_mis2_max2_u32(nodes, soff.data(), scols.data(), m1.data(), m2.data()); });
        launch(grid_of(nodes), [&] { amg_mis2_update_u32(nodes, m2.data(), state.data(), &flag, roots.data()); });
        if (!flag) break;
    }
    wu("state", state);
    size_t nroots = scan(roots);
    VU agg1(nodes, 0xffffffffu), agg(nodes, 0xffffffffu), left(nodes + 1, 0);
    launch(grid_of(nodes), [&] { amg_agg_pass1_u32(nodes, soff.data(), scols.data(), state.data(), roots.data(), agg1.data()); });
    launch(grid_of(nodes), [&] { amg_agg_pass2_u32(nodes, soff.data(), scols.data(), agg1.data(), agg.data(), left.data()); });
    size_t nleft = scan(left);
    if (nleft) launch(grid_of(nodes), [&] { amg_agg_leftover_u32(nodes, nroots, left.data(), agg.data()); });
    size_t count = nroots + nleft;
    wu("agg", agg); wu("count", VU{(unsigned)count});
    // tentative
    VF b(n, 1.0); VU poff(n + 1), pcols(n); VF pvals(n);
    launch(grid_of(n + 1), [&] { amg_iota_u32(n, poff.data()); });
    launch(grid_of(n), [&] { amg_tent_pattern_f64(n, bs, agg.data(), b.data(), pcols.data(), pvals.data()); });
    Csr pt{n, count, poff, pcols, pvals};
    Csr t = transpose(pt);
    VF norms(count);
    launch(grid_of(count), [&] { amg_tent_norms_f64(count, t.off.data(), t.vals.data(), norms.data()); });
    launch(grid_of(n), [&] { amg_tent_values_f64(n, pt.cols.data(), norms.data(), pt.vals.data()); });
    wcsr("Pt", pt); wf("bc", norms);
    VF d2(n), di(n);
    launch(grid_of(n), [&] { amg_diagonal_f64(n, a.off.data(), a.cols.data(), a.vals.data(), d2.data(), di.data()); });
    wf("dinv", di);
    double omega = (4.0 / 3.0) / rho;
    Csr ap = spgemm(a, pt);
    Csr p{ap.nrows, ap.ncols, ap.off, ap.cols, VF(ap.cols.size())};
    launch(grid_of(n), [&] { amg_smooth_values_f64(n, omega, di.data(), pt.off.data(), pt.cols.data(), pt.vals.data(), ap.off.data(), ap.cols.data(), ap.vals.data(), p.vals.data()); });
    wcsr("P", p);
    Csr r = transpose(p);
    Csr ap2 = spgemm(a, p);
    Csr ac = spgemm(r, ap2);
    wcsr("R", r); wcsr("Ac", ac);
    std::ofstream(argv[2]) << out.str();
    return 0;
}
