/* SPDX-License-Identifier: BSD-2-Clause */
/* Latency samples of the slingshot-emu tool (see ssemu_samples.h). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "ssemu_samples.h"

int ssemu_samples_add(struct ssemu_samples *s, double x)
{
	double *nv;

	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 1024;
		nv = realloc(s->v, s->cap * sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		s->v = nv;
	}
	s->v[s->n++] = x;
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

void ssemu_samples_sort(struct ssemu_samples *s)
{
	if (s->n)
		qsort(s->v, s->n, sizeof(*s->v), cmp_double);
}

double ssemu_samples_pct(const struct ssemu_samples *s, double p)
{
	size_t i;

	if (!s->n)
		return 0;
	i = (size_t)ceil(p / 100.0 * (double)s->n);
	if (i > 0)
		i--;
	return s->v[i < s->n ? i : s->n - 1];
}

double ssemu_samples_mean(const struct ssemu_samples *s)
{
	double mean = 0;
	size_t i;

	for (i = 0; i < s->n; i++)
		mean += s->v[i] / (double)s->n;
	return mean;
}

void ssemu_samples_free(struct ssemu_samples *s)
{
	free(s->v);
	s->v = NULL;
	s->n = s->cap = 0;
}
