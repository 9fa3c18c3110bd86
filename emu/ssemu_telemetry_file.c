/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Telemetry trace files: a snapshot of a fabric's telemetry
 * (ssemu_telemetry_read, ssemu_telemetry.c) saved to a file and loaded
 * back, checked, after the fabric is gone.  Apart from the counting hooks
 * the model calls: loading checks the trace's fabric configuration, and
 * the configuration's checks reach into the model's policy tables.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ssemu_priv.h"

#define TEL_MAGIC "SSEMUTEL"
#define TEL_VERSION 3	/* 2: per class drops_ack, drops_resp; 3: the
			 * configuration's modelled jobs */
#define TEL_ENDIAN 0x01020304u

/* 64 bytes, then the snapshot (its samples pointer zeroed), then
 * nsamples samples; all in the writer's byte order (endian says which). */
struct tel_file_hdr {
	char magic[8];
	uint32_t version;
	uint32_t hdr_bytes;
	uint32_t body_bytes;	/* sizeof(struct ssemu_telemetry) */
	uint32_t sample_bytes;	/* sizeof(struct ssemu_tel_sample) */
	uint32_t nsamples;
	uint32_t endian;
	uint64_t file_bytes;
	uint64_t checksum;	/* FNV-1a 64 of every byte after the header */
	uint64_t reserved[2];
};

_Static_assert(sizeof(struct tel_file_hdr) == 64, "trace header size");

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;

	while (n--) {
		h ^= *b++;
		h *= 0x100000001b3ULL;
	}
	return h;
}

#define FNV0 0xcbf29ce484222325ULL

int ssemu_telemetry_save(const struct ssemu_telemetry *t, const char *path,
			 char *err, size_t errlen)
{
	struct tel_file_hdr h;
	struct ssemu_telemetry body;
	size_t sbytes;
	FILE *fp;
	int ret = 0;

	if (!t || !path || !err)
		return -EINVAL;
	if (t->nsamples > SSEMU_TEL_MAX_SAMPLES ||
	    (t->nsamples && !t->samples)) {
		snprintf(err, errlen, "telemetry snapshot is inconsistent");
		return -EINVAL;
	}
	memcpy(&body, t, sizeof(body));	/* the same bytes written and summed */
	body.samples = NULL;
	sbytes = (size_t)t->nsamples * sizeof(*t->samples);
	memset(&h, 0, sizeof(h));
	memcpy(h.magic, TEL_MAGIC, 8);
	h.version = TEL_VERSION;
	h.hdr_bytes = sizeof(h);
	h.body_bytes = sizeof(body);
	h.sample_bytes = sizeof(struct ssemu_tel_sample);
	h.nsamples = t->nsamples;
	h.endian = TEL_ENDIAN;
	h.file_bytes = sizeof(h) + sizeof(body) + sbytes;
	h.checksum = fnv(fnv(FNV0, &body, sizeof(body)), t->samples, sbytes);
	fp = fopen(path, "wb");
	if (!fp) {
		ret = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return ret;
	}
	if (fwrite(&h, sizeof(h), 1, fp) != 1 ||
	    fwrite(&body, sizeof(body), 1, fp) != 1 ||
	    (sbytes && fwrite(t->samples, sbytes, 1, fp) != 1))
		ret = -EIO;
	if (fclose(fp) && !ret)
		ret = -EIO;
	if (ret)
		snprintf(err, errlen, "%s: write failed: %s", path,
			 strerror(errno ? errno : EIO));
	return ret;
}

/* Is what a trace says about itself possible? */
static const char *tel_check(struct ssemu_telemetry *t)
{
	char verr[128];
	uint64_t i, n = t->nsamples;
	uint32_t k;

	/* strings first: everything below may print them */
	t->config.preset[SSEMU_NAME_MAX - 1] = 0;
	t->config.routing[SSEMU_NAME_MAX - 1] = 0;
	t->config.cc[SSEMU_NAME_MAX - 1] = 0;
	t->config.arb[SSEMU_NAME_MAX - 1] = 0;
	for (k = 0; k < SSEMU_MAX_TCLASS; k++)
		t->config.tclass[k].name[SSEMU_NAME_MAX - 1] = 0;
	if (ssemu_config_validate(&t->config, verr, sizeof(verr)))
		return "its fabric configuration is invalid";
	if (t->njobs > SSEMU_TEL_JOBS || t->npairs > SSEMU_TEL_PAIRS)
		return "job or pair count out of range";
	if (t->interval != t->config.tel_interval)
		return "sample interval disagrees with its configuration";
	if (!t->interval && (n || t->samples_closed))
		return "samples without a sample interval";
	if (n > t->config.tel_samples || n > t->samples_closed ||
	    t->samples_lost != t->samples_closed - n)
		return "sample counts disagree";
	if (t->open.index != t->samples_closed)
		return "the open sample is out of place";
	if (t->interval && t->open.index > t->now / t->interval)
		return "samples beyond its model time";
	for (i = 0; i < n; i++)
		if (t->samples[i].index != t->samples_closed - n + i)
			return "samples out of order";
	return NULL;
}

int ssemu_telemetry_load(const char *path, struct ssemu_telemetry **out,
			 char *err, size_t errlen)
{
	struct tel_file_hdr h;
	struct ssemu_telemetry *t = NULL;
	const char *why = NULL;
	struct stat st;
	size_t sbytes;
	uint64_t sum;
	FILE *fp;
	int ret;

	if (!path || !out || !err)
		return -EINVAL;
	fp = fopen(path, "rb");
	if (!fp) {
		ret = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return ret;
	}
	if (fstat(fileno(fp), &st)) {
		ret = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		fclose(fp);
		return ret;
	}
	if (fread(&h, sizeof(h), 1, fp) != 1 ||
	    memcmp(h.magic, TEL_MAGIC, 8)) {
		why = "not a slingshot-emu telemetry trace (bad magic)";
		goto bad;
	}
	if (h.version != TEL_VERSION) {
		snprintf(err, errlen, "%s: trace format version %u, this "
			 "tool reads %u", path, h.version, TEL_VERSION);
		fclose(fp);
		return -EPROTO;
	}
	if (h.endian != TEL_ENDIAN) {
		why = "written on a machine of another byte order";
		goto bad;
	}
	if (h.hdr_bytes != sizeof(h) ||
	    h.body_bytes != sizeof(struct ssemu_telemetry) ||
	    h.sample_bytes != sizeof(struct ssemu_tel_sample)) {
		why = "written by a build with other record sizes";
		goto bad;
	}
	if (h.nsamples > SSEMU_TEL_MAX_SAMPLES) {
		why = "sample count out of range";
		goto bad;
	}
	sbytes = (size_t)h.nsamples * sizeof(struct ssemu_tel_sample);
	if (h.file_bytes != sizeof(h) + h.body_bytes + sbytes) {
		why = "its header sizes disagree";
		goto bad;
	}
	if ((uint64_t)st.st_size != h.file_bytes) {
		snprintf(err, errlen, "%s: truncated or padded trace: %llu "
			 "bytes, its header says %llu", path,
			 (unsigned long long)st.st_size,
			 (unsigned long long)h.file_bytes);
		fclose(fp);
		return -EPROTO;
	}
	t = calloc(1, sizeof(*t));
	if (!t) {
		fclose(fp);
		return -ENOMEM;
	}
	if (fread(t, sizeof(*t), 1, fp) != 1) {
		t->samples = NULL;
		why = "truncated";
		goto bad;
	}
	sum = fnv(FNV0, t, sizeof(*t));	/* as read: padding included */
	t->samples = NULL;
	if (h.nsamples) {
		t->samples = calloc(h.nsamples, sizeof(*t->samples));
		if (!t->samples) {
			free(t);
			fclose(fp);
			return -ENOMEM;
		}
		if (fread(t->samples, sbytes, 1, fp) != 1) {
			why = "truncated";
			goto bad;
		}
	}
	fclose(fp);
	fp = NULL;
	if (fnv(sum, t->samples, sbytes) != h.checksum) {
		why = "corrupt (checksum mismatch)";
		goto bad;
	}
	if (t->nsamples != h.nsamples) {
		why = "sample counts disagree";
		goto bad;
	}
	why = tel_check(t);
	if (why)
		goto bad;
	*out = t;
	return 0;
bad:
	snprintf(err, errlen, "%s: %s", path, why);
	if (fp)
		fclose(fp);
	ssemu_telemetry_free(t);
	return -EPROTO;
}
