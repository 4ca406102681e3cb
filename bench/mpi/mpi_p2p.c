/*
 * Open MPI reference for `pplaunch bench p2p` and `bench allreduce`, measured
 * the same way as those and bench/p2p_torch.py (gloo), to compare side by side.
 * Build and run it through bench/mpi/mpi_p2p.sh, which chooses the transport:
 *
 *     bench/mpi/mpi_p2p.sh tcp --min 8 --max 256M      # btl tcp over loopback, pml ob1
 *     bench/mpi/mpi_p2p.sh sm                          # btl vader (shared memory)
 *
 * --op p2p (exactly 2 ranks): rank 0 sends `iters` messages of `size` bytes to
 * rank 1 with blocking MPI_Send; rank 1 keeps two receives posted (MPI_Irecv
 * into two alternating buffers, reposting after each wait) and sends a 1-byte
 * acknowledgement after the last. Rank 0 times from the first send to the
 * acknowledgement: one-way algbw = size*iters/time. For sizes up to 64 KiB it
 * then times min(iters, 200) ping-pongs of the same size and reports half a
 * round trip (latency).
 *
 * --op allreduce (any number of ranks, 4 in the script): in-place MPI_Allreduce
 * float32 sum of --allreduce-bytes; busbw = algbw*2(n-1)/n as nccl-tests. The
 * result of the first all-reduce is checked exactly (each rank fills rank+1,
 * every element must be n(n+1)/2); a wrong element aborts the run.
 *
 * Every size runs once untimed (warm-up; 1000 untimed ping-pongs too), then --reps times, each after a
 * barrier; the median is reported. iters = min(1000, max(4, 256 MiB / size)).
 * --json prints one object per size with the keys of `pplaunch bench --json`
 * where they overlap (bytes, iters, seconds per message or per all-reduce,
 * algbw_gbps, busbw_gbps, lat_us) plus op, ranks and transport.
 */
#include <mpi.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum { TAG_DATA = 1, TAG_ACK = 2 };

#define LAT_MAX (64 << 10) /* largest size whose ping-pong latency is measured */
#define MAX_REPS 1000

struct opts {
	int64_t min, max, allreduce_bytes;
	int reps, json;
	const char *op, *transport;
};

static void usage(void)
{
	printf(
		"usage: mpi_p2p --op p2p|allreduce [--min SIZE] [--max SIZE] [--allreduce-bytes SIZE]\n"
		"               [--reps N] [--transport LABEL] [--json]\n"
		"  --op               p2p (2 ranks: one-way bandwidth, latency up to 64 KiB) or allreduce\n"
		"  --min, --max       p2p message sizes, doubling from --min (default 8 to 256M)\n"
		"  --allreduce-bytes  all-reduce buffer, a multiple of 4 (default 16M)\n"
		"  --reps             timed repetitions per size, median reported (default 3)\n"
		"  --transport        label printed in the header and the JSON (default: unlabelled)\n"
		"  --json             one JSON object per size instead of the table\n"
		"SIZE is a byte count with an optional suffix: 8, 64K, 16M, 256MiB, 1G.\n");
}

/* parse_size reads a byte count with an optional binary suffix, as the Size
 * flags of `pplaunch bench`: 8, 64K, 16M, 256MiB, 1G (case-insensitive). */
static int parse_size(const char *s, int64_t *out)
{
	static const struct {
		const char *name;
		int64_t mult;
	} units[] = {{"", 1},         {"B", 1},         {"K", 1 << 10},   {"KB", 1 << 10},
		     {"KIB", 1 << 10}, {"M", 1 << 20},   {"MB", 1 << 20},  {"MIB", 1 << 20},
		     {"G", 1 << 30},   {"GB", 1 << 30},  {"GIB", 1 << 30}};
	const char *p = s;
	while (isdigit((unsigned char)*p))
		p++;
	if (p == s)
		return -1;
	errno = 0;
	char *end;
	long long n = strtoll(s, &end, 10);
	if (errno != 0 || end != p)
		return -1;
	for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
		if (strcasecmp(p, units[i].name) == 0) {
			if (n > ((int64_t)1 << 62) / units[i].mult)
				return -1;
			*out = n * units[i].mult;
			return 0;
		}
	}
	return -1;
}

/* parse_args fills o from argv; on a bad flag it writes the reason to err and
 * returns -1, on --help it returns 1. */
static int parse_args(int argc, char **argv, struct opts *o, char *err, size_t errlen)
{
	*o = (struct opts){.min = 8, .max = 256 << 20, .allreduce_bytes = 16 << 20, .reps = 3,
			   .op = NULL, .transport = NULL};
	for (int i = 1; i < argc; i++) {
		const char *f = argv[i];
		if (strcmp(f, "--help") == 0 || strcmp(f, "-h") == 0)
			return 1;
		if (strcmp(f, "--json") == 0) {
			o->json = 1;
			continue;
		}
		int64_t *size = strcmp(f, "--min") == 0   ? &o->min
				: strcmp(f, "--max") == 0 ? &o->max
				: strcmp(f, "--allreduce-bytes") == 0 ? &o->allreduce_bytes
								      : NULL;
		int known = size || strcmp(f, "--reps") == 0 || strcmp(f, "--op") == 0 ||
			    strcmp(f, "--transport") == 0;
		if (!known) {
			snprintf(err, errlen, "unknown flag %s", f);
			return -1;
		}
		if (i + 1 >= argc) {
			snprintf(err, errlen, "%s needs a value", f);
			return -1;
		}
		const char *v = argv[++i];
		if (size) {
			if (parse_size(v, size) != 0) {
				snprintf(err, errlen, "%s %s: want a byte count such as 8, 64K, 16M or 256MiB", f, v);
				return -1;
			}
		} else if (strcmp(f, "--reps") == 0) {
			char *end;
			long n = strtol(v, &end, 10);
			if (*v == '\0' || *end != '\0' || n < 1 || n > MAX_REPS) {
				snprintf(err, errlen, "--reps %s: want a whole number from 1 to %d", v, MAX_REPS);
				return -1;
			}
			o->reps = (int)n;
		} else if (strcmp(f, "--op") == 0) {
			if (strcmp(v, "p2p") != 0 && strcmp(v, "allreduce") != 0) {
				snprintf(err, errlen, "--op %s: want p2p or allreduce", v);
				return -1;
			}
			o->op = v;
		} else {
			o->transport = v;
		}
	}
	if (!o->op) {
		snprintf(err, errlen, "--op is required: p2p or allreduce");
		return -1;
	}
	/* MPI counts are ints: one message of MPI_BYTE holds at most INT_MAX bytes. */
	if (o->min < 1 || o->max > INT_MAX) {
		snprintf(err, errlen, "--min %lld --max %lld: sizes must lie in 1..%d bytes",
			 (long long)o->min, (long long)o->max, INT_MAX);
		return -1;
	}
	if (o->min > o->max) {
		snprintf(err, errlen, "--min %lld is larger than --max %lld", (long long)o->min,
			 (long long)o->max);
		return -1;
	}
	if (o->allreduce_bytes < 4 || o->allreduce_bytes % 4 != 0 ||
	    o->allreduce_bytes / 4 > INT_MAX) {
		snprintf(err, errlen,
			 "--allreduce-bytes %lld: want a positive multiple of 4 (float32) up to %lld",
			 (long long)o->allreduce_bytes, 4LL * INT_MAX);
		return -1;
	}
	return 0;
}

static int iters_for(int64_t size)
{
	int64_t n = ((int64_t)256 << 20) / size;
	return (int)(n < 4 ? 4 : n > 1000 ? 1000 : n);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* median sorts v in place and returns its middle (mean of the two middles). */
static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void *xmalloc(size_t n, int rank)
{
	void *p = malloc(n);
	if (!p) {
		fprintf(stderr, "rank %d: cannot allocate %zu bytes\n", rank, n);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	return p;
}

/* stream: rank 0 sends iters messages to rank 1, which keeps two receives
 * posted and acknowledges the last. Returns rank 0's time (0 on rank 1). */
static double stream(int rank, char *buf, char *other, int size, int iters)
{
	char ack = 0;
	if (rank == 1) {
		char *bufs[2] = {buf, other};
		MPI_Request hs[2];
		MPI_Irecv(bufs[0], size, MPI_BYTE, 0, TAG_DATA, MPI_COMM_WORLD, &hs[0]);
		for (int i = 0; i < iters; i++) {
			if (i + 1 < iters)
				MPI_Irecv(bufs[(i + 1) % 2], size, MPI_BYTE, 0, TAG_DATA, MPI_COMM_WORLD,
					  &hs[(i + 1) % 2]);
			MPI_Wait(&hs[i % 2], MPI_STATUS_IGNORE);
		}
		MPI_Send(&ack, 1, MPI_BYTE, 0, TAG_ACK, MPI_COMM_WORLD);
		return 0;
	}
	double t0 = MPI_Wtime();
	for (int i = 0; i < iters; i++)
		MPI_Send(buf, size, MPI_BYTE, 1, TAG_DATA, MPI_COMM_WORLD);
	MPI_Recv(&ack, 1, MPI_BYTE, 1, TAG_ACK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	return MPI_Wtime() - t0;
}

/* ping_pong returns the time of iters round trips of size bytes. */
static double ping_pong(int rank, char *buf, int size, int iters)
{
	int peer = 1 - rank;
	double t0 = MPI_Wtime();
	for (int i = 0; i < iters; i++) {
		if (rank == 0)
			MPI_Send(buf, size, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD);
		MPI_Recv(buf, size, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		if (rank == 1)
			MPI_Send(buf, size, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD);
	}
	return MPI_Wtime() - t0;
}

/* print_json_string writes s as a JSON string literal. */
static void print_json_string(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

/* print_row writes one table row or one JSON object (rank 0 only). lat_us < 0
 * means not measured. */
static void print_row(const struct opts *o, const char *what, int ranks, int64_t size, int iters,
		      double seconds, double algbw, double busbw, double lat_us)
{
	if (o->json) {
		printf("{\"op\":\"%s\",\"ranks\":%d,\"transport\":", o->op, ranks);
		print_json_string(o->transport ? o->transport : "");
		printf(",\"bytes\":%lld,\"iters\":%d,\"seconds\":%.9g,\"algbw_gbps\":%.6g,"
		       "\"busbw_gbps\":%.6g",
		       (long long)size, iters, seconds, algbw, busbw);
		if (lat_us >= 0)
			printf(",\"lat_us\":%.6g", lat_us);
		printf("}\n");
	} else {
		char lat[32];
		if (lat_us >= 0)
			snprintf(lat, sizeof lat, "%9.1f", lat_us);
		else
			snprintf(lat, sizeof lat, "%9s", "-");
		printf("%16s %12lld %6d %12.3f %s", what, (long long)size, iters, algbw, lat);
		if (strcmp(o->op, "allreduce") == 0)
			printf(" time %.1f ms, busbw %.3f GB/s", seconds * 1e3, busbw);
		printf("\n");
	}
	fflush(stdout);
}

/* run_p2p measures every size between ranks 0 and 1 of a 2-rank world. */
static void run_p2p(const struct opts *o, int rank)
{
	double bw[MAX_REPS], lat[MAX_REPS];
	for (int64_t s = o->min; s <= o->max; s *= 2) {
		int size = (int)s, iters = iters_for(s);
		char *buf = xmalloc((size_t)size, rank), *other = xmalloc((size_t)size, rank);
		/* Touch every page so that no timing pays first-touch page faults. */
		memset(buf, rank + 1, (size_t)size);
		memset(other, rank + 1, (size_t)size);
		stream(rank, buf, other, size, 1); /* warm-up: connection, registration */
		if (size <= LAT_MAX)
			ping_pong(rank, buf, size, 1000); /* untimed, as bench p2p does */
		int nlat = 0;
		for (int r = 0; r < o->reps; r++) {
			MPI_Barrier(MPI_COMM_WORLD);
			double d = stream(rank, buf, other, size, iters);
			bw[r] = rank == 0 ? (double)size * iters / d / 1e9 : 0;
			if (size <= LAT_MAX) {
				int n = iters < 200 ? iters : 200;
				lat[nlat++] = ping_pong(rank, buf, size, n) / (2.0 * n) * 1e6;
			}
		}
		if (rank == 0) {
			double alg = median(bw, o->reps);
			print_row(o, "p2p 2 ranks", 2, s, iters, (double)s / alg / 1e9, alg, alg,
				  nlat ? median(lat, nlat) : -1);
		}
		free(buf);
		free(other);
	}
}

/* run_allreduce checks, then times, float32 sum all-reduces over all ranks. */
static void run_allreduce(const struct opts *o, int rank, int nranks)
{
	int64_t bytes = o->allreduce_bytes;
	int count = (int)(bytes / 4), iters = iters_for(bytes);
	float *x = xmalloc((size_t)bytes, rank);
	for (int i = 0; i < count; i++)
		x[i] = (float)(rank + 1);
	/* Warm-up, checked: small integers sum exactly in any order. */
	MPI_Allreduce(MPI_IN_PLACE, x, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
	const float want = (float)(nranks * (nranks + 1) / 2);
	long long wrong = 0, first = -1;
	for (int i = 0; i < count; i++) {
		if (x[i] != want) {
			if (first < 0)
				first = i;
			wrong++;
		}
	}
	if (wrong) {
		fprintf(stderr,
			"mpi_p2p: allreduce of %lld bytes on %d ranks: rank %d has %lld wrong elements, "
			"first x[%lld] = %g, want %g\n",
			(long long)bytes, nranks, rank, wrong, first, (double)x[first], (double)want);
	}
	long long total = 0;
	MPI_Allreduce(&wrong, &total, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
	if (total) {
		if (rank == 0)
			fprintf(stderr, "mpi_p2p: allreduce result wrong (%lld elements over all ranks)\n",
				total);
		MPI_Barrier(MPI_COMM_WORLD); /* so that rank 0 has spoken before anyone aborts */
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	/* Timed in place like torch's all_reduce; the values grow (and may reach
	 * inf), which costs the same as any other float32 sum. */
	double per[MAX_REPS];
	for (int r = 0; r < o->reps; r++) {
		MPI_Barrier(MPI_COMM_WORLD);
		double t0 = MPI_Wtime();
		for (int i = 0; i < iters; i++)
			MPI_Allreduce(MPI_IN_PLACE, x, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
		per[r] = (MPI_Wtime() - t0) / iters;
	}
	if (rank == 0) {
		char what[32];
		snprintf(what, sizeof what, "allreduce %d ranks", nranks);
		double s = median(per, o->reps), alg = (double)bytes / s / 1e9;
		print_row(o, what, nranks, bytes, iters, s, alg, alg * 2 * (nranks - 1) / nranks, -1);
	}
	free(x);
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	int rank, nranks;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);

	/* Every rank parses the same argv and so agrees; only rank 0 speaks. */
	struct opts o;
	char err[256];
	int rc = parse_args(argc, argv, &o, err, sizeof err);
	if (rc != 0) {
		if (rank == 0) {
			if (rc < 0)
				fprintf(stderr, "mpi_p2p: %s (--help lists the flags)\n", err);
			else
				usage();
		}
		MPI_Finalize();
		return rc < 0 ? 2 : 0;
	}
	if (strcmp(o.op, "p2p") == 0 && nranks != 2) {
		if (rank == 0)
			fprintf(stderr, "mpi_p2p: --op p2p needs exactly 2 ranks, got %d (mpirun -np 2)\n",
				nranks);
		MPI_Finalize();
		return 2;
	}

	if (rank == 0 && !o.json) {
		char version[MPI_MAX_LIBRARY_VERSION_STRING];
		int len;
		MPI_Get_library_version(version, &len);
		version[strcspn(version, "\n")] = '\0'; /* first line only */
		printf("%s, transport %s, %s, median of %d\n", version,
		       o.transport ? o.transport : "(unlabelled)",
		       strcmp(o.op, "p2p") == 0 ? "p2p one-way on 2 ranks" : "allreduce float32 sum",
		       o.reps);
		printf("%16s %12s %6s %12s %9s\n", "", "size(B)", "iters", "algbw(GB/s)", "lat(us)");
		fflush(stdout);
	}
	if (strcmp(o.op, "p2p") == 0)
		run_p2p(&o, rank);
	else
		run_allreduce(&o, rank, nranks);
	MPI_Finalize();
	return 0;
}
