/* The cheapest compiled fleet simulator we could write, to see how its rounds per CPU
 * second change from 2,000 to 100,000 devices (docs/PERFORMANCE.md, "Fleet scale").
 *
 * Not the project's simulator and not exact: the bench scenario's structure in compact
 * arrays. Closed-loop devices (think time exponential, mean 1 s) send requests of 147
 * prompt and 40-89 output tokens to the less loaded of two random servers; each round a
 * session's block waits in its server's inbound list, is taken FCFS into a batch (at
 * most 32, 8,192 new tokens), verified (20 ms + 0.5 ms per entry + 1 us per token),
 * accepts a trace-like 0-4 of gamma = 4 tokens, draws two jittered link delays from its
 * device's stream and, unless done, sends its next block. Sessions live in per-server
 * slot regions (128 bytes each: 8 fields and 8 buffered draws); requests wait in one heap.
 * It prints each fleet size twice: "prefetch 0", then "prefetch 1", where a batch's end
 * first reads the batch's session records in a pass of their own, so that their cache
 * misses overlap.
 *
 *   cc -O2 -o fleet_core benchmarks/probes/fleet_core.c -lm && ./fleet_core
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define GAMMA 4
#define SLOTS 256 /* session slots per server */
#define CAP 256   /* inbound and queue entries per server */
#define MAXB 32

typedef struct { double t; long i; } ev;
typedef struct {
  double committed, out, server, enq, net, qs, vs, ds; /* fields */
  double draw[8];                                      /* buffered draws */
} rec;
typedef struct { long kv, next, device; uint64_t state; } rec2;

static uint64_t g = 88172645463325252ull; /* the fleet-wide stream (routing, lengths) */
static double unif(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  uint64_t x = *s ^ (*s >> 29);
  return (x >> 11) * (1.0 / 9007199254740992.0);
}
static void push(ev *h, long *n, double t, long i) {
  long j = (*n)++;
  while (j > 0) {
    long p = (j - 1) >> 1;
    if (h[p].t < t || (h[p].t == t && h[p].i <= i)) break;
    h[j] = h[p]; j = p;
  }
  h[j].t = t; h[j].i = i;
}
static ev pop(ev *h, long *n) {
  ev top = h[0], last = h[--(*n)];
  long j = 0;
  for (;;) {
    long c = 2 * j + 1;
    if (c >= *n) break;
    if (c + 1 < *n && (h[c + 1].t < h[c].t || (h[c + 1].t == h[c].t && h[c + 1].i < h[c].i))) c++;
    if (last.t < h[c].t || (last.t == h[c].t && last.i <= h[c].i)) break;
    h[j] = h[c]; j = c;
  }
  h[j] = last;
  return top;
}

static long run(long N, long S, double duration, int prefetch) {
  rec *R = calloc(S * SLOTS, sizeof(rec));
  rec2 *R2 = calloc(S * SLOTS, sizeof(rec2));
  uint64_t *dev_state = malloc(N * sizeof(uint64_t));
  long *free_n = malloc(S * sizeof(long)), *free_s = malloc(S * SLOTS * sizeof(long));
  double *inb_t = malloc(S * CAP * sizeof(double)), *bstart = calloc(S, sizeof(double));
  double *wake = malloc(S * sizeof(double));
  long *inb_i = malloc(S * CAP * sizeof(long)), *inb_n = calloc(S, sizeof(long));
  long *queue = malloc(S * CAP * sizeof(long)), *qh = calloc(S, sizeof(long));
  long *qt = calloc(S, sizeof(long)), *batch = malloc(S * MAXB * sizeof(long));
  long *bn = calloc(S, sizeof(long)), *busy = calloc(S, sizeof(long));
  ev *arrivals = malloc((2 * N + 1) * sizeof(ev)), *servers = malloc((4 * S + 4) * sizeof(ev));
  long an = 0, sn = 0, rounds = 0, runs[64];
  for (long k = 0; k < 64; k++) runs[k] = (k * 7) % 6;
  for (long d = 0; d < N; d++) dev_state[d] = 7919ull * d + 1;
  for (long s = 0; s < S; s++) {
    free_n[s] = SLOTS; wake[s] = INFINITY;
    for (long k = 0; k < SLOTS; k++) free_s[s * SLOTS + k] = s * SLOTS + SLOTS - 1 - k;
  }
  for (long d = 0; d < N; d++) push(arrivals, &an, unif(&g), d);
  for (;;) {
    double ta = an ? arrivals[0].t : INFINITY, ts = sn ? servers[0].t : INFINITY, t;
    long srv;
    if (ta <= ts) {
      if (ta > duration) break;
      ev e = pop(arrivals, &an);
      t = e.t;
      if (e.i >= N) { /* the last tokens reached the device: it thinks */
        long sl = e.i - N, d = R2[sl].device;
        srv = (long)R[sl].server;
        dev_state[d] = R2[sl].state;
        free_s[srv * SLOTS + free_n[srv]++] = sl;
        double next = t - log(1.0 - unif(&g));
        if (next <= duration) push(arrivals, &an, next, d);
        continue;
      }
      long a = (long)(unif(&g) * S), b = (long)(unif(&g) * S); /* route */
      srv = (qt[a] - qh[a] + inb_n[a] <= qt[b] - qh[b] + inb_n[b]) ? a : b;
      long sl = free_s[srv * SLOTS + --free_n[srv]];
      rec *r = &R[sl];
      r->committed = 0; r->out = 40 + (long)(unif(&g) * 50); r->server = srv;
      r->net = r->qs = r->vs = r->ds = 0;
      R2[sl].kv = 0; R2[sl].next = 8; R2[sl].device = e.i; R2[sl].state = dev_state[e.i];
      double arrive = t + 0.025;
      long j = inb_n[srv]++;
      inb_t[srv * CAP + j] = arrive; inb_i[srv * CAP + j] = sl;
      if (!busy[srv] && arrive < wake[srv]) { wake[srv] = arrive; push(servers, &sn, arrive, S + srv); }
      continue;
    }
    ev e = pop(servers, &sn);
    t = e.t;
    if (e.i < S) { /* a batch ends */
      srv = e.i;
      busy[srv] = 0;
      double start = bstart[srv], verify = t - start, warm = 0;
      long *b = &batch[srv * MAXB];
      if (prefetch)
        for (long k = 0; k < bn[srv]; k++) warm += R[b[k]].committed + R2[b[k]].kv;
      if (warm < -1) printf("%f\n", warm);
      for (long k = 0; k < bn[srv]; k++) {
        long sl = b[k];
        rec *r = &R[sl];
        long pos = (long)r->committed, acc = runs[pos % 64] > GAMMA ? GAMMA : runs[pos % 64];
        long total = pos + acc + 1;
        r->committed = total; r->qs += start - r->enq; r->vs += verify;
        rounds++;
        long i = R2[sl].next;
        if (i + 2 > 8) {
          for (int m = 0; m < 8; m++) r->draw[m] = unif(&R2[sl].state);
          i = 0;
        }
        double down = 0.005 - 0.001 * log(1.0 - r->draw[i]);
        double up = 0.005 - 0.001 * log(1.0 - r->draw[i + 1]);
        R2[sl].next = i + 2;
        double deliver = t + down;
        if (total >= r->out) {
          R2[sl].kv = 0;
          push(arrivals, &an, deliver, N + sl);
          continue;
        }
        R2[sl].kv = 147 + total;
        double draft = 0.004 * GAMMA;
        r->ds += draft; r->net += down + up;
        long j = inb_n[srv]++;
        inb_t[srv * CAP + j] = deliver + draft + up; inb_i[srv * CAP + j] = sl;
      }
      bn[srv] = 0;
    } else { /* a wake-up */
      srv = e.i - S;
      if (wake[srv] == t) wake[srv] = INFINITY;
      if (busy[srv]) continue;
    }
    long n = inb_n[srv]; /* the blocks that arrived by t join the queue */
    for (long j = 0; j < n;) {
      long at = srv * CAP + j;
      if (inb_t[at] <= t) {
        R[inb_i[at]].enq = inb_t[at];
        queue[srv * CAP + qt[srv]++ % CAP] = inb_i[at];
        n--;
        inb_t[at] = inb_t[srv * CAP + n]; inb_i[at] = inb_i[srv * CAP + n];
      } else j++;
    }
    inb_n[srv] = n;
    if (qt[srv] == qh[srv]) { /* idle: wake at the next block */
      double m = INFINITY;
      for (long j = 0; j < n; j++) if (inb_t[srv * CAP + j] < m) m = inb_t[srv * CAP + j];
      if (m < wake[srv]) { wake[srv] = m; push(servers, &sn, m, S + srv); }
      continue;
    }
    long size = 0, tokens = 0; /* FCFS dispatch */
    while (qh[srv] < qt[srv] && size < MAXB) {
      long sl = queue[srv * CAP + qh[srv] % CAP];
      long fresh = 147 + (long)R[sl].committed + GAMMA - R2[sl].kv;
      if (size && tokens + fresh > 8192) break;
      qh[srv]++;
      batch[srv * MAXB + size++] = sl;
      tokens += fresh;
    }
    bn[srv] = size; busy[srv] = 1; bstart[srv] = t;
    push(servers, &sn, t + 0.02 + 0.0005 * size + 1e-6 * tokens, srv);
  }
  free(R); free(R2); free(dev_state); free(free_n); free(free_s); free(inb_t); free(bstart);
  free(wake); free(inb_i); free(inb_n); free(queue); free(qh); free(qt); free(batch); free(bn);
  free(busy); free(arrivals); free(servers);
  return rounds;
}

int main(void) {
  long fleets[] = {2000, 5000, 10000, 20000, 50000, 100000};
  for (int prefetch = 0; prefetch < 2; prefetch++)
    for (int k = 0; k < 6; k++) {
      long n = fleets[k];
      struct timespec a, b;
      clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);
      long rounds = run(n, n / 50, 2e7 / (n * 15.0), prefetch); /* ~11M rounds each */
      clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &b);
      double s = (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) * 1e-9;
      printf("prefetch %d %7ld devices: %9ld rounds, %5.0f ns per round, %9.0f rounds per CPU s\n",
             prefetch, n, rounds, s * 1e9 / rounds, rounds / s);
    }
  return 0;
}
