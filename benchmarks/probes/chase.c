/* A pointer chase over N records of 64 bytes: one dependent random access per step,
 * 20 million steps, CPU time (docs/PERFORMANCE.md, "Fleet scale"): what one access to
 * compact state costs as the state outgrows the caches.
 *
 *   cc -O2 -o chase benchmarks/probes/chase.c && ./chase
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
typedef struct { long next; char pad[56]; } rec;  /* one 64-byte record */
int main(void) {
    long sizes[] = {2000, 20000, 100000, 1000000};
    for (int k = 0; k < 4; k++) {
        long n = sizes[k], *perm = malloc(n * sizeof(long));
        rec *r = aligned_alloc(64, n * sizeof(rec));
        for (long i = 0; i < n; i++) perm[i] = i;
        srand(1);
        for (long i = n - 1; i > 0; i--) {  /* a random cycle through every record */
            long j = rand() % (i + 1), t = perm[i]; perm[i] = perm[j]; perm[j] = t;
        }
        for (long i = 0; i < n; i++) r[perm[i]].next = perm[(i + 1) % n];
        long p = perm[0], steps = 20000000;
        for (long i = 0; i < n; i++) p = r[p].next;  /* warm up */
        struct timespec a, b;
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);
        for (long i = 0; i < steps; i++) p = r[p].next;
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &b);
        double ns = ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / steps;
        printf("%8ld records: %5.1f ns per access (%ld)\n", n, ns, p & 1);
        free(r); free(perm);
    }
    return 0;
}
