// probe.cu -- measure the GPU's address translation (TLB reach, walk latency,
// random-gather throughput) for one kind of device memory per process.
//
//   probe --kind malloc            [options]   memory from cudaMalloc
//   probe --kind vmm --handle SIZE [options]   one VA range, PINNED handles of
//                                              SIZE mapped back to back (VMM)
// options:
//   --max-fp SIZE     largest chase footprint and size of the allocation (64G)
//   --max-gather SIZE largest gather buffer (32G)
//   --deadline S      stop starting new measurements after S seconds (600)
//   --out DIR         append CSV rows to DIR/chase.csv, gather.csv, alloc.csv (.)
//   --label NAME      kind name written in the CSVs (default cudaMalloc / vmm_SIZE)
//   --min-fp SIZE     smallest chase footprint (2M)
//   --max-fp4k SIZE   largest footprint of the 4 KiB-stride chase (128M)
//   --steps N         footprints per octave (2: x1 and x1.5; N>2: 2^(k/N))
//   --chasers B       B single-thread chasers on disjoint sub-footprints (1)
//   --kind host       pinned host memory (cudaHostAlloc, mapped), chase only
//   --only LIST       comma list of parts: gather,line2m,line64k,data64k,data2m,line4k
// SIZE takes K, M, G suffixes (binary).
//
// Pointer chase: one thread follows a chain of 64-bit pointers. The chain is a
// single random cycle (Feistel permutation) over "entries"; entry e is page
// (e % P) of the footprint (P = footprint / stride), at cache line
// (page + hash(page) + e / P) mod (stride / 128) inside that page.
//   variant "line": 1 entry per page (data touched = P lines, stays in L2)
//   variant "data": K entries per page, K chosen so that P*K*128 B >= 512 MiB
//                   (capped at every line of the page): data misses L2 once the
//                   footprint is several times the L2.
// Loads are ld.global.cg (L2 only) so the L1 data cache never hides a step.
// The chain is built on the GPU, warmed by min(entries, 131072) loads, then
// timed 3 x 65536 dependent loads (cudaEvent and clock64); median reported.
//
// Gather: SMs*2048 threads, each does 4096 random 4-byte loads (xorshift64
// index masked to the buffer), sums into a register and writes one word.
// 1 warm-up + 5 timed runs per size; G loads/s median, min, max.
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <math.h>
#include <vector>
#include <algorithm>
#include <string>

#define CU(call) do { CUresult r_ = (call); if (r_ != CUDA_SUCCESS) { \
    const char *s_ = NULL; cuGetErrorString(r_, &s_); \
    fprintf(stderr, "FATAL %s:%d: %s -> %d (%s)\n", __FILE__, __LINE__, #call, (int)r_, s_ ? s_ : "?"); \
    fflush(stdout); fflush(stderr); exit(2); } } while (0)
#define CK(call) do { cudaError_t e_ = (call); if (e_ != cudaSuccess) { \
    fprintf(stderr, "FATAL %s:%d: %s -> %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
    fflush(stdout); fflush(stderr); exit(2); } } while (0)

static const uint64_t KiB = 1024ull, MiB = 1024ull * 1024, GiB = 1024ull * 1024 * 1024;

static double now_s(void) {
    struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint64_t parse_size(const char *s) {
    char *end; double v = strtod(s, &end);
    uint64_t m = 1;
    if (*end == 'K' || *end == 'k') m = KiB;
    else if (*end == 'M' || *end == 'm') m = MiB;
    else if (*end == 'G' || *end == 'g') m = GiB;
    else if (*end != 0) { fprintf(stderr, "bad size %s\n", s); exit(2); }
    return (uint64_t)(v * (double)m);
}

static std::string fmt_size(uint64_t b) {
    char buf[64];
    if (b >= GiB && b % (GiB / 2) == 0) snprintf(buf, sizeof buf, "%gG", (double)b / GiB);
    else if (b >= MiB && b % (MiB / 2) == 0) snprintf(buf, sizeof buf, "%gM", (double)b / MiB);
    else snprintf(buf, sizeof buf, "%gK", (double)b / KiB);
    return buf;
}

// ---------------------------------------------------------------- device code

__host__ __device__ static inline uint32_t hash32(uint32_t x) {
    x ^= x >> 16; x *= 0x7feb352dU; x ^= x >> 15; x *= 0x846ca68bU; x ^= x >> 16;
    return x;
}

// Bijection on [0, 2^(2*half)), 4 Feistel rounds; cycle-walk into [0, M).
__device__ static inline uint64_t feistel(uint64_t v, int half, uint32_t seed) {
    uint64_t mask = (1ull << half) - 1;
    uint64_t L = v >> half, R = v & mask;
    for (int r = 0; r < 4; r++) {
        uint64_t F = (uint64_t)(hash32((uint32_t)R ^ (uint32_t)(R >> 32) * 0x9e3779b9U ^ (seed + 0x632be5abU * r))) ;
        F = (F | (F << 32)) & mask;
        uint64_t nL = R, nR = L ^ F;
        L = nL; R = nR;
    }
    return (L << half) | R;
}
__device__ static inline uint64_t perm(uint64_t i, uint64_t M, int half, uint32_t seed) {
    uint64_t v = i;
    do { v = feistel(v, half, seed); } while (v >= M);
    return v;
}

struct ChainGeo {
    char *base;
    uint64_t P;        // pages
    uint64_t stride;   // bytes
    uint64_t L;        // lines per page (stride / 128)
    uint64_t M;        // entries = P * K
    int half;
    uint32_t seed;
};

__device__ static inline uint64_t *entry_addr(const ChainGeo &g, uint64_t e) {
    uint64_t page = e % g.P, j = e / g.P;
    uint64_t line = (page + hash32((uint32_t)page ^ (uint32_t)(page >> 32) ^ g.seed) + j) % g.L;
    return (uint64_t *)(g.base + page * g.stride + line * 128);
}

__global__ void build_chain(ChainGeo g) {
    uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x;
    if (i >= g.M) return;
    uint64_t a = perm(i, g.M, g.half, g.seed);
    uint64_t b = perm(i + 1 == g.M ? 0 : i + 1, g.M, g.half, g.seed);
    *entry_addr(g, a) = (uint64_t)entry_addr(g, b);
}

__global__ void chain_start(ChainGeo g, uint64_t *out) {
    out[0] = (uint64_t)entry_addr(g, perm(0, g.M, g.half, g.seed));
}

// One thread per block; block b follows its own chain from start[b].
__global__ void chase(const uint64_t *start, long n, uint64_t *out, long long *cyc, unsigned *smid) {
    uint64_t p = start[blockIdx.x];
    long long t0 = clock64();
#pragma unroll 4
    for (long i = 0; i < n; i++) p = __ldcg((const unsigned long long *)p);
    long long t1 = clock64();
    out[blockIdx.x] = p;
    cyc[blockIdx.x] = t1 - t0;
    unsigned sm; asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    smid[blockIdx.x] = sm;
}

__global__ void gather(const uint32_t *buf, uint64_t mask, int iters, uint64_t seed, uint32_t *out) {
    uint64_t tid = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x;
    uint64_t x = (tid + 1) * 0x9e3779b97f4a7c15ull ^ seed;
    x ^= x >> 31; x *= 0xbf58476d1ce4e5b9ull; x ^= x >> 27; x |= 1;
    uint32_t acc = 0;
#pragma unroll 8
    for (int i = 0; i < iters; i++) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        acc += buf[x & mask];
    }
    out[tid] = acc;
}

// ---------------------------------------------------------------- host side

static FILE *open_csv(const std::string &dir, const char *name, const char *header) {
    std::string path = dir + "/" + name;
    FILE *f = fopen(path.c_str(), "a");
    if (!f) { fprintf(stderr, "FATAL cannot open %s\n", path.c_str()); exit(2); }
    fseek(f, 0, SEEK_END);
    if (ftell(f) == 0) { fprintf(f, "%s\n", header); fflush(f); }
    return f;
}

struct Mem {
    std::string kind;       // "cudaMalloc" or "vmm_2M" ...
    uint64_t handle = 0;    // 0 for cudaMalloc
    bool host = false;      // pinned host memory (cudaHostAlloc)
    uint64_t size = 0;
    char *ptr = NULL;
    CUdeviceptr va = 0;
    std::vector<CUmemGenericAllocationHandle> handles;
};

static FILE *g_alloc;
static void alloc_row(const Mem &m, const char *op, long count, double total_s) {
    fprintf(g_alloc, "%s,%llu,%llu,%s,%ld,%.1f,%.2f\n", m.kind.c_str(),
            (unsigned long long)m.handle, (unsigned long long)m.size, op, count,
            total_s * 1e6, count ? total_s * 1e6 / count : 0.0);
    fflush(g_alloc);
    printf("alloc %s %s: %ld calls, %.1f us total, %.2f us each\n", m.kind.c_str(), op, count,
           total_s * 1e6, count ? total_s * 1e6 / count : 0.0);
    fflush(stdout);
}

static void mem_alloc(Mem &m, CUdevice dev) {
    if (m.host) {
        double t = now_s();
        void *h = NULL;
        CK(cudaHostAlloc(&h, m.size, cudaHostAllocMapped));
        void *d = NULL;
        CK(cudaHostGetDevicePointer(&d, h, 0));
        m.ptr = (char *)d; m.va = (CUdeviceptr)h;
        alloc_row(m, "cudaHostAlloc(mapped)", 1, now_s() - t);
        return;
    }
    if (m.handle == 0) {
        double t = now_s();
        CK(cudaMalloc((void **)&m.ptr, m.size));
        alloc_row(m, "cudaMalloc", 1, now_s() - t);
        return;
    }
    if (m.size % m.handle) { fprintf(stderr, "FATAL size not a multiple of handle\n"); exit(2); }
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = (int)dev;
    double t = now_s();
    CU(cuMemAddressReserve(&m.va, m.size, m.handle, 0, 0));
    alloc_row(m, "cuMemAddressReserve", 1, now_s() - t);
    long n = (long)(m.size / m.handle);
    m.handles.resize(n);
    double tc = 0, tm = 0;
    for (long i = 0; i < n; i++) {
        double a = now_s();
        CU(cuMemCreate(&m.handles[i], m.handle, &prop, 0));
        double b = now_s();
        CU(cuMemMap(m.va + (uint64_t)i * m.handle, m.handle, 0, m.handles[i], 0));
        double c = now_s();
        tc += b - a; tm += c - b;
    }
    alloc_row(m, "cuMemCreate", n, tc);
    alloc_row(m, "cuMemMap", n, tm);
    CUmemAccessDesc acc;
    memset(&acc, 0, sizeof acc);
    acc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    acc.location.id = (int)dev;
    acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    t = now_s();
    CU(cuMemSetAccess(m.va, m.size, &acc, 1));
    alloc_row(m, "cuMemSetAccess(whole range)", 1, now_s() - t);
    m.ptr = (char *)m.va;
}

static void mem_free(Mem &m) {
    CK(cudaDeviceSynchronize());
    if (m.host) {
        double t = now_s();
        CK(cudaFreeHost((void *)m.va));
        alloc_row(m, "cudaFreeHost", 1, now_s() - t);
        return;
    }
    if (m.handle == 0) {
        double t = now_s();
        CK(cudaFree(m.ptr));
        alloc_row(m, "cudaFree", 1, now_s() - t);
        return;
    }
    double t = now_s();
    CU(cuMemUnmap(m.va, m.size));
    alloc_row(m, "cuMemUnmap(whole range)", 1, now_s() - t);
    t = now_s();
    for (auto h : m.handles) CU(cuMemRelease(h));
    alloc_row(m, "cuMemRelease", (long)m.handles.size(), now_s() - t);
    t = now_s();
    CU(cuMemAddressFree(m.va, m.size));
    alloc_row(m, "cuMemAddressFree", 1, now_s() - t);
    m.handles.clear();
}

static double g_t0, g_deadline;
static bool past_deadline(void) { return now_s() - g_t0 > g_deadline; }

static uint64_t *d_out, *d_start; static long long *d_cyc; static unsigned *d_smid;
static const int MAX_CHASERS = 256;
static cudaEvent_t ev0, ev1;

struct ChaseResult { double ns, ns_min, ns_max, cyc; };

// B chasers (one block of one thread each) follow B independent chains, chain b
// over the sub-footprint [b*fp/B, (b+1)*fp/B); B=1 is the plain single chase.
static ChaseResult run_chase(const Mem &m, uint64_t fp, uint64_t stride, int K_target_all, int B,
                             uint64_t *P_out, uint64_t *M_out) {
    uint64_t sub = fp / B / stride * stride;
    ChainGeo g;
    g.stride = stride; g.P = sub / stride; g.L = stride / 128;
    uint64_t K = 1;
    if (K_target_all) {
        const uint64_t target = (512 * MiB) / 128 / B;   // 4M entries in all
        K = (target + g.P - 1) / g.P;
        if (K > g.L) K = g.L;
    }
    g.M = g.P * K;
    int bits = 1; while ((1ull << bits) < g.M) bits++;
    g.half = (bits + 1) / 2; if (g.half < 1) g.half = 1;
    *P_out = g.P * B; *M_out = g.M * B;
    unsigned threads = 256; uint64_t blocks = (g.M + threads - 1) / threads;
    for (int b = 0; b < B; b++) {
        g.base = m.ptr + (uint64_t)b * sub;
        g.seed = hash32((uint32_t)(fp >> 12) * 31u + (uint32_t)stride + (uint32_t)K * 7u + 12345u + 1000003u * b);
        build_chain<<<(unsigned)blocks, threads>>>(g);
        CK(cudaGetLastError());
        chain_start<<<1, 1>>>(g, d_start + b);
        CK(cudaGetLastError());
    }
    long warm = (long)std::min<uint64_t>(g.M, 131072);
    chase<<<B, 1>>>(d_start, warm, d_out, d_cyc, d_smid);
    CK(cudaGetLastError());
    CK(cudaMemcpy(d_start, d_out, 8 * B, cudaMemcpyDeviceToDevice));
    const long N = 65536; const int reps = 3;
    std::vector<double> ns, cy;
    for (int r = 0; r < reps; r++) {
        CK(cudaEventRecord(ev0));
        chase<<<B, 1>>>(d_start, N, d_out, d_cyc, d_smid);
        CK(cudaGetLastError());
        CK(cudaEventRecord(ev1));
        CK(cudaEventSynchronize(ev1));
        float ms; CK(cudaEventElapsedTime(&ms, ev0, ev1));
        long long c[MAX_CHASERS]; CK(cudaMemcpy(c, d_cyc, 8 * B, cudaMemcpyDeviceToHost));
        uint64_t end[MAX_CHASERS]; CK(cudaMemcpy(end, d_out, 8 * B, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(d_start, d_out, 8 * B, cudaMemcpyDeviceToDevice));
        for (int b = 0; b < B; b++) {
            uint64_t lo = (uint64_t)m.ptr + (uint64_t)b * sub;
            if (end[b] < lo || end[b] >= lo + sub) {
                fprintf(stderr, "FATAL chain %d left its footprint (0x%llx)\n", b, (unsigned long long)end[b]);
                exit(2);
            }
        }
        long long cmax = 0; for (int b = 0; b < B; b++) cmax = std::max(cmax, c[b]);
        ns.push_back(ms * 1e6 / N); cy.push_back((double)cmax / N);
    }
    static int logged_B = 0;
    if (B > 1 && logged_B != B) {
        unsigned sm[MAX_CHASERS]; CK(cudaMemcpy(sm, d_smid, 4 * B, cudaMemcpyDeviceToHost));
        std::vector<unsigned> v(sm, sm + B); std::sort(v.begin(), v.end());
        int distinct = (int)(std::unique(v.begin(), v.end()) - v.begin());
        printf("chasers %d ran on %d distinct SMs:", B, distinct);
        for (int b = 0; b < B; b++) printf(" %u", sm[b]);
        printf("\n");
        logged_B = B;
    }
    std::vector<double> s = ns; std::sort(s.begin(), s.end());
    std::vector<double> sc = cy; std::sort(sc.begin(), sc.end());
    return ChaseResult{s[reps / 2], s[0], s[reps - 1], sc[reps / 2]};
}

// steps == 2: powers of two and their midpoints (1.5x); steps > 2: geometric
// points 2^(k/steps) inside each octave.
static std::vector<uint64_t> footprints(uint64_t lo, uint64_t hi, int steps) {
    std::vector<uint64_t> v;
    for (uint64_t f = lo; f <= hi; f *= 2) {
        v.push_back(f);
        if (steps <= 2) {
            if (f * 2 <= hi) v.push_back(f + f / 2);
        } else {
            for (int k = 1; k < steps; k++) {
                uint64_t x = (uint64_t)((double)f * pow(2.0, (double)k / steps));
                if (x < hi && f * 2 <= hi) v.push_back(x);
            }
        }
    }
    return v;
}

int main(int argc, char **argv) {
    std::string kind = "malloc", out = ".", label = "", only = "gather,line2m,line64k,data64k,data2m,line4k";
    uint64_t handle = 0, max_fp = 64 * GiB, max_gather = 32 * GiB, min_fp = 2 * MiB, max_fp4k = 128 * MiB;
    int steps = 2, chasers = 1;
    g_deadline = 600;
    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        auto need = [&](void) -> const char * {
            if (i + 1 >= argc) { fprintf(stderr, "missing value for %s\n", a.c_str()); exit(2); }
            return argv[++i];
        };
        if (a == "--kind") kind = need();
        else if (a == "--handle") handle = parse_size(need());
        else if (a == "--max-fp") max_fp = parse_size(need());
        else if (a == "--max-gather") max_gather = parse_size(need());
        else if (a == "--deadline") g_deadline = atof(need());
        else if (a == "--out") out = need();
        else if (a == "--only") only = need();
        else if (a == "--label") label = need();
        else if (a == "--min-fp") min_fp = parse_size(need());
        else if (a == "--max-fp4k") max_fp4k = parse_size(need());
        else if (a == "--steps") steps = atoi(need());
        else if (a == "--chasers") chasers = atoi(need());
        else { fprintf(stderr, "unknown argument %s\n", a.c_str()); exit(2); }
    }
    auto want = [&](const char *p) { return ("," + only + ",").find(std::string(",") + p + ",") != std::string::npos; };
    g_t0 = now_s();
    setvbuf(stdout, NULL, _IOLBF, 0);

    CK(cudaSetDevice(0));
    CK(cudaFree(0));
    CU(cuInit(0));
    CUdevice dev; CU(cuDeviceGet(&dev, 0));
    cudaDeviceProp prop; CK(cudaGetDeviceProperties(&prop, 0));
    int drv = 0, rt = 0; CK(cudaDriverGetVersion(&drv)); CK(cudaRuntimeGetVersion(&rt));
    printf("device %s, %d SMs, L2 %d B, mem %.1f GiB, driver API %d, runtime %d\n", prop.name,
           prop.multiProcessorCount, prop.l2CacheSize, prop.totalGlobalMem / (double)GiB, drv, rt);

    {   // allocation granularity, logged for every process
        CUmemAllocationProp p; memset(&p, 0, sizeof p);
        p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
        p.location.type = CU_MEM_LOCATION_TYPE_DEVICE; p.location.id = (int)dev;
        size_t gmin = 0, grec = 0;
        CU(cuMemGetAllocationGranularity(&gmin, &p, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
        CU(cuMemGetAllocationGranularity(&grec, &p, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
        printf("granularity PINNED device 0: minimum %zu B, recommended %zu B\n", gmin, grec);
        if (handle && handle % gmin) { fprintf(stderr, "FATAL handle %llu not a multiple of granularity %zu\n",
                                               (unsigned long long)handle, gmin); exit(2); }
    }

    Mem m;
    m.handle = (kind == "vmm") ? handle : 0;
    if (kind == "vmm" && handle == 0) { fprintf(stderr, "FATAL --kind vmm needs --handle\n"); exit(2); }
    if (chasers < 1 || chasers > MAX_CHASERS) { fprintf(stderr, "FATAL --chasers 1..%d\n", MAX_CHASERS); exit(2); }
    if (kind != "vmm" && kind != "malloc" && kind != "host") { fprintf(stderr, "FATAL unknown kind %s\n", kind.c_str()); exit(2); }
    m.host = (kind == "host");
    m.kind = m.handle ? "vmm_" + fmt_size(m.handle) : m.host ? "host_pinned" : "cudaMalloc";
    if (!label.empty()) m.kind = label;
    m.size = std::max(max_fp, max_gather);
    if (m.handle) m.size = (m.size + m.handle - 1) / m.handle * m.handle;

    g_alloc = open_csv(out, "alloc.csv", "kind,handle_bytes,total_bytes,op,calls,total_us,us_per_call");
    FILE *fc = open_csv(out, "chase.csv",
        "kind,handle_bytes,variant,stride_bytes,footprint_bytes,pages,entries,data_bytes,ns_per_load,ns_min,ns_max,cycles_per_load,chasers");
    FILE *fg = open_csv(out, "gather.csv",
        "kind,handle_bytes,buffer_bytes,threads,loads_per_run,run1,run2,run3,run4,run5,median_gloads,min_gloads,max_gloads");

    CK(cudaMalloc((void **)&d_out, 8 * MAX_CHASERS)); CK(cudaMalloc((void **)&d_cyc, 8 * MAX_CHASERS));
    CK(cudaMalloc((void **)&d_start, 8 * MAX_CHASERS)); CK(cudaMalloc((void **)&d_smid, 4 * MAX_CHASERS));
    CK(cudaEventCreate(&ev0)); CK(cudaEventCreate(&ev1));

    printf("== %s: allocating %s\n", m.kind.c_str(), fmt_size(m.size).c_str());
    mem_alloc(m, dev);
    if (m.host) memset((void *)m.va, 0, m.size);
    else CU(cuMemsetD8((CUdeviceptr)m.ptr, 0, m.size));
    CK(cudaDeviceSynchronize());
    printf("t=%.1fs allocated and cleared\n", now_s() - g_t0);

    if (want("gather") && !m.host) {
        int threads = prop.multiProcessorCount * 2048;
        int iters = 4096;
        uint32_t *d_sink; CK(cudaMalloc((void **)&d_sink, (size_t)threads * 4));
        for (uint64_t sz = 1 * GiB; sz <= max_gather && sz <= m.size; sz *= 2) {
            if (past_deadline()) { printf("deadline: skipping gather %s\n", fmt_size(sz).c_str()); break; }
            uint64_t mask = sz / 4 - 1;
            std::vector<double> r;
            for (int k = 0; k < 6; k++) {
                CK(cudaEventRecord(ev0));
                gather<<<threads / 256, 256>>>((const uint32_t *)m.ptr, mask, iters, 0x1234567ull * (k + 1), d_sink);
                CK(cudaGetLastError());
                CK(cudaEventRecord(ev1));
                CK(cudaEventSynchronize(ev1));
                float ms; CK(cudaEventElapsedTime(&ms, ev0, ev1));
                if (k > 0) r.push_back((double)threads * iters / (ms * 1e-3) / 1e9);
            }
            std::vector<double> s = r; std::sort(s.begin(), s.end());
            fprintf(fg, "%s,%llu,%llu,%d,%lld,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f\n", m.kind.c_str(),
                    (unsigned long long)m.handle, (unsigned long long)sz, threads, (long long)threads * iters,
                    r[0], r[1], r[2], r[3], r[4], s[2], s[0], s[4]);
            fflush(fg);
            printf("t=%.1fs gather %s %s: median %.2f G loads/s (min %.2f max %.2f)\n", now_s() - g_t0,
                   m.kind.c_str(), fmt_size(sz).c_str(), s[2], s[0], s[4]);
        }
        CK(cudaFree(d_sink));
    }

    struct Part { const char *name; const char *variant; uint64_t stride; uint64_t lo, hi; int all; };
    Part parts[] = {
        {"line2m", "line", 2 * MiB, std::max(min_fp, 2 * MiB), max_fp, 0},
        {"line64k", "line", 64 * KiB, std::max(min_fp, 64 * KiB), max_fp, 0},
        {"data64k", "data", 64 * KiB, std::max(min_fp, 64 * KiB), max_fp, 1},
        {"data2m", "data", 2 * MiB, std::max(min_fp, 2 * MiB), max_fp, 1},
        {"line4k", "line", 4 * KiB, std::max(min_fp, 4 * KiB), std::min<uint64_t>(max_fp, max_fp4k), 0},
    };
    bool stop = false;
    for (auto &pt : parts) {
        if (stop || !want(pt.name)) continue;
        uint64_t lastP = 0;
        for (uint64_t fp : footprints(pt.lo, pt.hi, steps)) {
            if (fp > m.size) break;
            if (fp / chasers / pt.stride == 0) continue;
            if (fp / chasers / pt.stride * chasers == lastP) continue;
            if (past_deadline()) { printf("deadline: stopping chases at %s %s\n", pt.name, fmt_size(fp).c_str()); stop = true; break; }
            uint64_t P, M;
            uint64_t fpa = fp / chasers / pt.stride * pt.stride * chasers;
            ChaseResult r = run_chase(m, fpa, pt.stride, pt.all, chasers, &P, &M);
            lastP = P;
            uint64_t data = std::min<uint64_t>(M * 128, fpa);
            fprintf(fc, "%s,%llu,%s,%llu,%llu,%llu,%llu,%llu,%.2f,%.2f,%.2f,%.1f,%d\n", m.kind.c_str(),
                    (unsigned long long)m.handle, pt.variant, (unsigned long long)pt.stride,
                    (unsigned long long)fpa, (unsigned long long)P, (unsigned long long)M,
                    (unsigned long long)data, r.ns, r.ns_min, r.ns_max, r.cyc, chasers);
            fflush(fc);
            printf("t=%.1fs chase %s %s stride %s fp %s x%d: %.1f ns/load (%.0f cycles)\n", now_s() - g_t0,
                   m.kind.c_str(), pt.variant, fmt_size(pt.stride).c_str(), fmt_size(fpa).c_str(), chasers, r.ns, r.cyc);
        }
    }

    mem_free(m);
    CK(cudaFree(d_out)); CK(cudaFree(d_cyc)); CK(cudaFree(d_start)); CK(cudaFree(d_smid));
    fclose(fc); fclose(fg); fclose(g_alloc);
    printf("t=%.1fs done %s\n", now_s() - g_t0, m.kind.c_str());
    return 0;
}
