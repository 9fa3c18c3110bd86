/* SPDX-License-Identifier: BSD-2-Clause */
/* Latency samples of the slingshot-emu tool: collect, sort, percentiles. */
#ifndef SSEMU_SAMPLES_H
#define SSEMU_SAMPLES_H

#include <stddef.h>

struct ssemu_samples {
	double *v;
	size_t n, cap;
};

/* @return 0 or -ENOMEM. */
int ssemu_samples_add(struct ssemu_samples *s, double x);
/* Sort ascending; percentiles and max read the sorted samples. */
void ssemu_samples_sort(struct ssemu_samples *s);
/* The @p-th percentile (nearest rank) of sorted samples, 0 if none. */
double ssemu_samples_pct(const struct ssemu_samples *s, double p);
double ssemu_samples_mean(const struct ssemu_samples *s);
void ssemu_samples_free(struct ssemu_samples *s);

#endif
