/* Reference C simulator of the general-service supermarket model: the speed anchor of
   lbrepro.sim.general_service (run by bench/bench_general.py).

   The same workload as the numba kernel, decision for decision: N FCFS servers, Poisson
   arrivals of rate lam*N, each job joins the shortest of d servers sampled uniformly with
   replacement (ties uniformly among the tied draws, reservoir sampling), i.i.d. service
   times from a distribution given by the kernel's encoding (code + parameter vector, see
   lbrepro.sim.service_sampling). Every queue length is stored; the busy servers' completion
   times sit in a binary min-heap (the event calendar); Q[k] = servers with >= k jobs has its
   time integral closed lazily, at the one level an event changes. Random numbers are
   xoshiro256** with the kernel's uniform (53 bits, on (0, 1]) and Lemire's exact bounded
   integers, so started from the kernel's generator state it follows the kernel's path.

   gcc -O3 -march=native -o refsim_general refsim_general.c -lm
   ./refsim_general N LAM D HORIZON S0 S1 S2 S3 CODE P1 [P2 ...]

   Prints "events E elapsed S events_per_s R mean_jobs M u_1 .. u_7" (time averages over
   [0, HORIZON]). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static uint64_t s[4];

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static inline uint64_t next_u64(void) {
    const uint64_t result = rotl(s[1] * 5, 7) * 9;
    const uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

/* Uniform on (0, 1]: never 0, so -log(u) is finite. */
static inline double uniform(void) { return ((next_u64() >> 11) + 1) * 0x1.0p-53; }

/* Exactly uniform integer in [0, n), 1 <= n < 2^32 (Lemire's method with rejection). */
static inline int64_t randint(uint64_t n) {
    uint64_t m = (next_u64() >> 32) * n;
    uint64_t low = m & 0xFFFFFFFFu;
    if (low < n) {
        const uint64_t threshold = ((1ULL << 32) - n) % n;
        while (low < threshold) {
            m = (next_u64() >> 32) * n;
            low = m & 0xFFFFFFFFu;
        }
    }
    return (int64_t)(m >> 32);
}

/* One service time of the distribution (code, p): the kernel's sampler, line for line. */
static double sample_service(int code, const double *p) {
    switch (code) {
    case 0: /* exponential(rate) */
        return -log(uniform()) / p[0];
    case 1: { /* Erlang(m, rate) */
        const int m = (int)p[0];
        double x = 0.0;
        for (int i = 0; i < m; i++) x -= log(uniform());
        return x / p[1];
    }
    case 2: { /* hyperexponential [n, probs..., rates...] */
        const int n = (int)p[0];
        const double x = uniform();
        int i = 0;
        double acc = p[1];
        while (i < n - 1 && x > acc) {
            i++;
            acc += p[1 + i];
        }
        return -log(uniform()) / p[1 + n + i];
    }
    case 3: { /* Coxian [n, rates..., cont...] */
        const int n = (int)p[0];
        double x = 0.0;
        for (int i = 0; i < n; i++) {
            x -= log(uniform()) / p[1 + i];
            if (i < n - 1 && uniform() > p[1 + n + i]) break;
        }
        return x;
    }
    case 4: /* deterministic */
        return p[0];
    case 5: /* Weibull(shape, scale) by inversion */
        return p[1] * pow(-log(uniform()), 1.0 / p[0]);
    case 6: /* Lomax(alpha, sigma) by inversion */
        return p[1] * (pow(uniform(), -1.0 / p[0]) - 1.0);
    default: { /* lognormal(m, s), Box-Muller */
        const double r = sqrt(-2.0 * log(uniform()));
        const double z = r * cos(2.0 * M_PI * uniform());
        return exp(p[0] + p[1] * z);
    }
    }
}

/* Binary min-heap of completion times ht[] with their servers hs[]. */
static void sift_down(double *ht, int64_t *hs, int64_t n, int64_t i) {
    const double x_t = ht[i];
    const int64_t x_s = hs[i];
    for (;;) {
        int64_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && ht[c + 1] < ht[c]) c++;
        if (ht[c] >= x_t) break;
        ht[i] = ht[c];
        hs[i] = hs[c];
        i = c;
    }
    ht[i] = x_t;
    hs[i] = x_s;
}

static void push(double *ht, int64_t *hs, int64_t n, double t_done, int64_t server) {
    int64_t i = n;
    while (i > 0) {
        const int64_t parent = (i - 1) >> 1;
        if (ht[parent] <= t_done) break;
        ht[i] = ht[parent];
        hs[i] = hs[parent];
        i = parent;
    }
    ht[i] = t_done;
    hs[i] = server;
}

int main(int argc, char **argv) {
    if (argc < 11) {
        fprintf(stderr, "usage: %s N LAM D HORIZON S0 S1 S2 S3 CODE P1 [P2 ...]\n", argv[0]);
        return 2;
    }
    const int64_t N = atoll(argv[1]);
    const double lam = atof(argv[2]);
    const int d = atoi(argv[3]);
    const double horizon = atof(argv[4]);
    for (int i = 0; i < 4; i++) s[i] = strtoull(argv[5 + i], NULL, 10);
    const int code = atoi(argv[9]);
    const int n_params = argc - 10;
    double *p = malloc(n_params * sizeof(double));
    for (int i = 0; i < n_params; i++) p[i] = atof(argv[10 + i]);

    int64_t *q = calloc(N, sizeof(int64_t));
    double *ht = calloc(N, sizeof(double));
    int64_t *hs = calloc(N, sizeof(int64_t));
    int64_t levels = 64;
    int64_t *Q = calloc(levels, sizeof(int64_t));
    double *area = calloc(levels, sizeof(double));
    double *last = calloc(levels, sizeof(double));
    Q[0] = N;
    const double lam_n = lam * N;
    double t = 0.0;
    double t_arr = -log(uniform()) / lam_n;
    int64_t n = 0, top = 0, events = 0;

    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (;;) {
        const double t_dep = n > 0 ? ht[0] : INFINITY;
        if (t_arr <= t_dep) {
            if (t_arr >= horizon) break;
            t = t_arr;
            t_arr = t - log(uniform()) / lam_n;
            int64_t best = randint(N);
            int64_t best_q = q[best];
            int64_t ties = 1;
            for (int i = 1; i < d; i++) {
                const int64_t c = randint(N);
                const int64_t qc = q[c];
                if (qc < best_q) {
                    best = c;
                    best_q = qc;
                    ties = 1;
                } else if (qc == best_q) {
                    ties++;
                    if (randint(ties) == 0) best = c;
                }
            }
            const int64_t k = best_q + 1;
            area[k] += Q[k] * (t - last[k]);
            last[k] = t;
            Q[k]++;
            q[best] = k;
            if (k == 1) {
                push(ht, hs, n, t + sample_service(code, p), best);
                n++;
            }
            events++;
            if (k > top) {
                top = k;
                if (top + 1 >= levels) {
                    Q = realloc(Q, 2 * levels * sizeof(int64_t));
                    area = realloc(area, 2 * levels * sizeof(double));
                    last = realloc(last, 2 * levels * sizeof(double));
                    for (int64_t i = levels; i < 2 * levels; i++) {
                        Q[i] = 0;
                        area[i] = 0.0;
                        last[i] = t;
                    }
                    levels *= 2;
                }
            }
        } else {
            if (t_dep >= horizon) break;
            t = t_dep;
            const int64_t server = hs[0];
            const int64_t k = q[server];
            area[k] += Q[k] * (t - last[k]);
            last[k] = t;
            Q[k]--;
            q[server] = k - 1;
            if (k > 1) {
                ht[0] = t + sample_service(code, p);
                sift_down(ht, hs, n, 0);
            } else {
                n--;
                if (n > 0) {
                    ht[0] = ht[n];
                    hs[0] = hs[n];
                    sift_down(ht, hs, n, 0);
                }
            }
            events++;
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    const double elapsed = (b.tv_sec - a.tv_sec) + 1e-9 * (b.tv_nsec - a.tv_nsec);
    double jobs = 0.0;
    for (int64_t k = 1; k < levels; k++) {
        area[k] += Q[k] * (horizon - last[k]);
        jobs += area[k];
    }
    printf("events %lld elapsed %.6f events_per_s %.6e mean_jobs %.10g", (long long)events,
           elapsed, events / elapsed, jobs / (N * horizon));
    for (int k = 1; k < 8; k++) printf(" u_%d %.10g", k, k < levels ? area[k] / (N * horizon) : 0.0);
    printf("\n");
    return 0;
}
