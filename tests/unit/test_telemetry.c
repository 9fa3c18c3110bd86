/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Telemetry: the counters per job and class add up to exactly what was
 * sent and received (latency sums to the events' own time - posted);
 * samples cover the run at the configured interval and are closed lazily
 * (an idle fabric stays idle); two classes with 80% / 20% minimum shares
 * under the "shares" arbitration show 80/20 in the sampled bandwidth; the
 * ring keeps its last samples and counts the ones lost; jobs beyond the
 * table land in "other"; trace files round-trip and bad ones are refused.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <slingshot_emu/ssemu.h>

#include "tf.h"

#define MSG 65536

/* Attach a NIC of job @job at @port with one endpoint. */
static unsigned add_job(struct tf *t, uint32_t port, uint32_t job)
{
	struct ssemu_nic_opts no = { .port = port, .job = job, .rank = -1 };
	unsigned i = t->n;

	assert_true(i < TF_MAX);
	assert_int_equal(ssemu_nic_attach(t->fab, &no, &t->nic[i]), 0);
	assert_int_equal(ssemu_ep_open(t->nic[i], &t->ep[i]), 0);
	t->n++;
	return i;
}

static int slot_of(const struct ssemu_telemetry *tel, uint32_t job)
{
	uint32_t i;

	for (i = 0; i < tel->njobs; i++)
		if (tel->job[i] == job)
			return (int)i;
	return -1;
}

static struct ssemu_telemetry *read_tel(struct tf *t)
{
	struct ssemu_telemetry *tel = NULL;

	assert_int_equal(ssemu_telemetry_read(t->fab, &tel), 0);
	assert_non_null(tel);
	return tel;
}

/* Sum over the kept samples and the open one. */
static uint64_t sampled_rx(const struct ssemu_telemetry *tel, int slot,
			   uint32_t tc)
{
	uint64_t sum = tel->open.rx_bytes[slot][tc];
	uint32_t k;

	for (k = 0; k < tel->nsamples; k++)
		sum += tel->samples[k].rx_bytes[slot][tc];
	return sum;
}

static void test_tel_counts_add_up(void **state)
{
	static uint8_t buf[20000];
	struct ssemu_config c;
	struct ssemu_telemetry *tel;
	uint64_t want_bytes[2][2] = { { 0 } }, want_msgs[2][2] = { { 0 } };
	uint64_t want_pkts[2][2] = { { 0 } }, lat[2][2] = { { 0 } };
	uint64_t jp_msgs[2][2] = { { 0 } }, jp_lat[2][2] = { { 0 } };
	uint64_t rng = 42, pair_msgs = 0, hist;
	uint32_t jobs[2] = { 7, 9 }, tc, j, b, i;
	struct tf *t;
	size_t k;

	tf_config(&c, "switch");
	t = tf_open(&c);
	add_job(t, 0, 7);
	add_job(t, 1, 7);
	add_job(t, 2, 9);
	add_job(t, 3, 9);
	for (i = 0; i < 400; i++) {
		unsigned from = (unsigned)(tf_rng_next(&rng) % 4);
		unsigned to = (from + 1 + tf_rng_next(&rng) % 3) % 4;
		size_t len = (size_t)(tf_rng_next(&rng) % sizeof(buf));

		if (i % 10 == 0)
			len = 0;
		tc = (uint32_t)(tf_rng_next(&rng) % 2);
		j = from / 2;
		tf_send(t, from, to, buf, len, tc, i, 0);
		want_bytes[j][tc] += len;
		want_msgs[j][tc]++;
		want_pkts[j][tc] += len ? (len + c.mtu - 1) / c.mtu : 1;
		if (i % 16 == 0)
			ssemu_fabric_progress(t->fab, 64);
	}
	tf_run_idle(t, 1000000);
	/* the latency of every message as its receiver saw it */
	for (k = 0; k < t->nlog; k++) {
		const struct ssemu_event *ev = &t->log[k].ev;
		uint32_t src = SSEMU_ADDR_PORT(ev->src);

		if (ev->type != SSEMU_EV_RECV)
			continue;
		lat[src / 2][ev->tclass] += ev->time - ev->posted;
		jp_msgs[src / 2][t->log[k].ep / 2]++;
		jp_lat[src / 2][t->log[k].ep / 2] += ev->time - ev->posted;
	}
	tel = read_tel(t);
	assert_int_equal(tel->njobs, 2);
	for (j = 0; j < 2; j++) {
		int s = slot_of(tel, jobs[j]);

		assert_true(s >= 0);
		for (tc = 0; tc < 2; tc++) {
			const struct ssemu_tel_counters *jc = &tel->jc[s][tc];

			assert_int_equal(jc->tx_msgs, want_msgs[j][tc]);
			assert_int_equal(jc->rx_msgs, want_msgs[j][tc]);
			assert_int_equal(jc->tx_bytes, want_bytes[j][tc]);
			assert_int_equal(jc->rx_bytes, want_bytes[j][tc]);
			assert_int_equal(jc->tx_pkts, want_pkts[j][tc]);
			assert_int_equal(jc->rx_pkts, want_pkts[j][tc]);
			assert_int_equal(jc->lat_sum, lat[j][tc]);
			for (hist = 0, b = 0; b < SSEMU_TEL_LAT_BINS; b++)
				hist += jc->lat[b];
			assert_int_equal(hist, want_msgs[j][tc]);
			/* nothing was lost, so the samples hold it all */
			assert_int_equal(tel->samples_lost, 0);
			assert_int_equal(sampled_rx(tel, s, tc),
					 want_bytes[j][tc]);
		}
	}
	/* job to job: every message once, latency as the receivers saw it */
	for (j = 0; j < 2; j++) {
		for (i = 0; i < 2; i++) {
			const struct ssemu_tel_jpair *jp =
				&tel->jpair[slot_of(tel, jobs[j])]
					   [slot_of(tel, jobs[i])];

			assert_int_equal(jp->msgs, jp_msgs[j][i]);
			assert_int_equal(jp->lat_sum, jp_lat[j][i]);
		}
	}
	/* 4 NICs, 12 pairs at most, all in the table */
	assert_true(tel->npairs <= 12);
	for (i = 0; i < tel->npairs; i++) {
		pair_msgs += tel->pair[i].msgs;
		assert_int_equal(tel->pair[i].src_job,
				 tel->pair[i].src_port < 2 ? 7 : 9);
	}
	assert_int_equal(pair_msgs, 400);
	assert_int_equal(tel->other_pairs.msgs, 0);
	/* nothing dropped in a healthy fabric */
	for (tc = 0; tc < c.ntclass; tc++)
		assert_int_equal(tel->tc[tc].drops, 0);
	ssemu_telemetry_free(tel);
	tf_close(t);
}

static void test_tel_latency_bins(void **state)
{
	uint64_t h[SSEMU_TEL_LAT_BINS] = { 0 };
	struct ssemu_latency l;
	uint32_t i;

	assert_int_equal(ssemu_tel_bin_lo(0), 0);
	assert_int_equal(ssemu_tel_bin_lo(1), 100 * SSEMU_PS_PER_NS);
	assert_int_equal(ssemu_tel_bin_lo(5), 200 * SSEMU_PS_PER_NS);
	assert_int_equal(ssemu_tel_bin_lo(SSEMU_TEL_LAT_BINS - 1),
			 100 * SSEMU_PS_PER_NS << 20);
	for (i = 1; i < SSEMU_TEL_LAT_BINS; i++)
		assert_true(ssemu_tel_bin_lo(i) > ssemu_tel_bin_lo(i - 1));
	/* 100 messages in [1.6 us, 2 us): p50 and p99 inside it */
	h[1 + 4 * 4] = 100;
	ssemu_tel_latency(h, 100 * 1800 * SSEMU_PS_PER_NS, &l);
	assert_int_equal(l.count, 100);
	assert_true(l.mean_ns > 1799 && l.mean_ns < 1801);
	assert_true(l.p50_ns >= 1600 && l.p50_ns <= 2000);
	assert_true(l.p99_ns >= l.p50_ns && l.p99_ns <= 2000);
}

/*
 * What the samples (closed and open, none lost) count of each class adds
 * up to the run's totals: bytes injected to the jobs' counters, the edge
 * queue depths seen to the class's mean and maximum.
 */
static void samples_add_up(const struct ssemu_telemetry *tel)
{
	uint64_t tx, q_sum, q_n, q_max, jtx;
	uint32_t tc, k, j;

	assert_int_equal(tel->samples_lost, 0);
	for (tc = 0; tc < SSEMU_MAX_TCLASS; tc++) {
		tx = tel->open.tx_bytes[tc];
		q_sum = tel->open.q_sum[tc];
		q_n = tel->open.q_n[tc];
		q_max = tel->open.q_max[tc];
		for (k = 0; k < tel->nsamples; k++) {
			tx += tel->samples[k].tx_bytes[tc];
			q_sum += tel->samples[k].q_sum[tc];
			q_n += tel->samples[k].q_n[tc];
			q_max = q_max > tel->samples[k].q_max[tc] ?
					q_max : tel->samples[k].q_max[tc];
		}
		for (jtx = 0, j = 0; j < SSEMU_TEL_JOB_SLOTS; j++)
			jtx += tel->jc[j][tc].tx_bytes;
		assert_int_equal(tx, jtx);
		assert_int_equal(q_sum, tel->tc[tc].q_sum);
		assert_int_equal(q_n, tel->tc[tc].q_n);
		assert_int_equal(q_max, tel->tc[tc].q_max);
	}
	/* (the run's traffic: a class with bytes and queue samples) */
	for (jtx = 0, q_n = 0, tc = 0; tc < SSEMU_MAX_TCLASS; tc++) {
		jtx += tel->jc[0][tc].tx_bytes;
		q_n += tel->tc[tc].q_n;
	}
	assert_true(jtx > 0);
	assert_true(q_n > 0);
}

static void test_tel_samples_cover_run(void **state)
{
	static uint8_t buf[4096];
	struct ssemu_config c;
	struct ssemu_telemetry *tel;
	ssemu_time_t iv = 5 * SSEMU_PS_PER_US, end, now;
	struct tf *t;
	uint32_t k;

	tf_config(&c, "switch");
	c.tel_interval = iv;
	t = tf_open(&c);
	tf_add(t, 0);
	tf_add(t, 1);
	for (now = 0; now < 100 * SSEMU_PS_PER_US; now += SSEMU_PS_PER_US) {
		assert_int_equal(ssemu_fabric_run_until(t->fab, now), 0);
		tf_send(t, 0, 1, buf, sizeof(buf), 0, 0, 0);
		tf_pump(t);
	}
	tf_run_idle(t, 1000000);
	tel = read_tel(t);
	end = tel->now;
	assert_int_equal(tel->interval, iv);
	assert_int_equal(tel->samples_closed, end / iv);
	assert_int_equal(tel->nsamples, end / iv);
	assert_int_equal(tel->open.index, end / iv);
	for (k = 0; k < tel->nsamples; k++) {
		assert_int_equal(tel->samples[k].index, k);
		/* traffic flows through the whole run: 20 sends per 20 us */
		if (k < 19)
			assert_true(tel->samples[k].rx_bytes[0][0] > 0);
	}
	samples_add_up(tel);
	ssemu_telemetry_free(tel);

	/* a long idle stretch: no engine event, samples closed on reading */
	assert_true(ssemu_fabric_idle(t->fab));
	assert_int_equal(ssemu_fabric_run_until(t->fab, end + SSEMU_PS_PER_MS),
			 0);
	assert_true(ssemu_fabric_idle(t->fab));
	tel = read_tel(t);
	assert_true(ssemu_fabric_idle(t->fab));
	assert_int_equal(tel->samples_closed, (end + SSEMU_PS_PER_MS) / iv);
	assert_int_equal(tel->samples_lost, 0);
	assert_int_equal(tel->samples[tel->nsamples - 1].rx_bytes[0][0], 0);
	ssemu_telemetry_free(tel);
	tf_close(t);
}

/* Two sources in classes with 80% and 20% minimum shares into one port. */
static void test_tel_shares_80_20(void **state)
{
	static uint8_t buf[MSG];
	struct iovec iov = { buf, MSG };
	struct ssemu_send s = { .iov = &iov, .iov_count = 1 };
	struct ssemu_config c;
	struct ssemu_telemetry *tel;
	uint64_t a = 0, b = 0;
	ssemu_time_t now;
	struct tf *t;
	uint32_t k;
	double pa;

	tf_config(&c, "switch");
	memset(c.tclass, 0, sizeof(c.tclass));
	c.ntclass = 2;
	snprintf(c.tclass[0].name, sizeof(c.tclass[0].name), "A");
	c.tclass[0].min_pct = 80;
	c.tclass[0].max_pct = 100;
	c.tclass[0].priority = 1;
	snprintf(c.tclass[1].name, sizeof(c.tclass[1].name), "B");
	c.tclass[1].min_pct = 20;
	c.tclass[1].max_pct = 100;
	c.tclass[1].priority = 1;
	c.default_tclass = 0;
	snprintf(c.arb, sizeof(c.arb), "shares");
	c.tel_interval = 10 * SSEMU_PS_PER_US;
	t = tf_open(&c);
	tf_add(t, 0);
	tf_add(t, 1);
	tf_add(t, 2);
	s.dest = ssemu_ep_addr(t->ep[0]);
	for (now = 0; now < 260 * SSEMU_PS_PER_US; now += SSEMU_PS_PER_US) {
		assert_int_equal(ssemu_fabric_run_until(t->fab, now), 0);
		tf_pump(t);
		s.tclass = 0;
		while (ssemu_ep_send(t->ep[1], &s) == 0)
			;
		s.tclass = 1;
		while (ssemu_ep_send(t->ep[2], &s) == 0)
			;
	}
	tel = read_tel(t);
	/* samples 5..24: 50 to 250 us, after the start-up transient */
	for (k = 0; k < tel->nsamples; k++) {
		if (tel->samples[k].index < 5 || tel->samples[k].index >= 25)
			continue;
		a += tel->samples[k].rx_bytes[0][0];
		b += tel->samples[k].rx_bytes[0][1];
	}
	pa = 100.0 * (double)a / (double)(a + b);
	print_message("sampled shares: %.1f%% / %.1f%%\n", pa, 100 - pa);
	assert_true(pa > 77 && pa < 83);
	ssemu_telemetry_free(tel);
	tf_run_idle(t, 1000000);
	tf_close(t);
}

static void test_tel_ring_wrap(void **state)
{
	static uint8_t buf[2048];
	struct ssemu_config c;
	struct ssemu_telemetry *tel;
	ssemu_time_t now, iv = SSEMU_PS_PER_US;
	uint64_t closed;
	struct tf *t;
	uint32_t k;

	tf_config(&c, "switch");
	c.tel_interval = iv;
	c.tel_samples = 16;
	t = tf_open(&c);
	tf_add(t, 0);
	tf_add(t, 1);
	for (now = 0; now < 50 * SSEMU_PS_PER_US; now += SSEMU_PS_PER_US / 2) {
		assert_int_equal(ssemu_fabric_run_until(t->fab, now), 0);
		tf_send(t, 0, 1, buf, sizeof(buf), 0, 0, 0);
		tf_pump(t);
	}
	tf_run_idle(t, 1000000);
	tel = read_tel(t);
	closed = tel->now / iv;
	assert_int_equal(tel->samples_closed, closed);
	assert_int_equal(tel->nsamples, 16);
	assert_int_equal(tel->samples_lost, closed - 16);
	for (k = 0; k < 16; k++)
		assert_int_equal(tel->samples[k].index, closed - 16 + k);
	assert_true(tel->samples[0].rx_bytes[0][0] > 0);
	ssemu_telemetry_free(tel);

	/* a jump far past the ring: the kept samples are the last, empty */
	assert_int_equal(ssemu_fabric_run_until(t->fab, 10 * SSEMU_PS_PER_MS),
			 0);
	tel = read_tel(t);
	assert_int_equal(tel->samples_closed, 10000);
	assert_int_equal(tel->samples_lost, 10000 - 16);
	for (k = 0; k < 16; k++) {
		assert_int_equal(tel->samples[k].index, 10000 - 16 + k);
		assert_int_equal(tel->samples[k].rx_bytes[0][0], 0);
	}
	ssemu_telemetry_free(tel);
	tf_close(t);
}

static void test_tel_jobs_overflow(void **state)
{
	static uint8_t buf[64];
	struct ssemu_config c;
	struct ssemu_telemetry *tel;
	struct tf *t;
	uint32_t i;

	tf_config(&c, "2switch");
	c.max_nics = 20;
	t = tf_open(&c);
	add_job(t, 0, 1000);
	for (i = 1; i <= 18; i++)
		add_job(t, i, 100 + i);
	for (i = 1; i <= 18; i++)
		tf_send(t, i, 0, buf, sizeof(buf), 0, 0, 0);
	tf_run_idle(t, 1000000);
	tel = read_tel(t);
	assert_int_equal(tel->njobs, SSEMU_TEL_JOBS);
	for (i = 0; i < SSEMU_TEL_JOBS; i++)
		assert_int_equal(tel->jc[i][0].rx_msgs, 1);
	assert_int_equal(tel->jc[SSEMU_TEL_OTHER][0].rx_msgs, 2);
	assert_int_equal(tel->jc[SSEMU_TEL_OTHER][0].rx_bytes, 128);
	/* the receiver's job came too late for a slot of its own */
	for (i = 0; i < SSEMU_TEL_JOBS; i++)
		assert_int_equal(tel->jpair[i][SSEMU_TEL_OTHER].msgs, 1);
	assert_int_equal(tel->jpair[SSEMU_TEL_OTHER][SSEMU_TEL_OTHER].msgs,
			 2);
	ssemu_telemetry_free(tel);
	tf_close(t);
}

/* An incast: congestion control marks and throttles, the edge queue
 * fills; without congestion control neither marks nor throttles. */
static void incast(const char *cc, struct ssemu_tel_class *out)
{
	static uint8_t buf[MSG];
	struct ssemu_config c;
	struct ssemu_telemetry *tel;
	ssemu_time_t now;
	struct tf *t;
	unsigned i;

	tf_config(&c, "switch");
	snprintf(c.cc, sizeof(c.cc), "%s", cc);
	t = tf_open(&c);
	for (i = 0; i < 5; i++)
		tf_add(t, i);
	for (now = 0; now < 100 * SSEMU_PS_PER_US; now += 5 * SSEMU_PS_PER_US) {
		assert_int_equal(ssemu_fabric_run_until(t->fab, now), 0);
		for (i = 1; i < 5; i++)
			tf_send(t, i, 0, buf, sizeof(buf), c.default_tclass, 0,
				0);
		tf_pump(t);
	}
	tf_run_idle(t, 1000000);
	tel = read_tel(t);
	*out = tel->tc[c.default_tclass];
	print_message("cc %s: marks %llu throttles %llu q_max %llu\n", cc,
		      (unsigned long long)out->marks,
		      (unsigned long long)out->throttles,
		      (unsigned long long)out->q_max);
	ssemu_telemetry_free(tel);
	tf_close(t);
}

static void test_tel_cc_counters(void **state)
{
	struct ssemu_tel_class on, off;

	incast("endpoint-pair", &on);
	incast("none", &off);
	assert_true(on.marks > 0);
	assert_true(on.throttles > 0);
	assert_true(on.throttles <= on.marks);
	assert_true(on.q_max >= 16);	/* the marking threshold */
	assert_true(on.q_n > 0);
	assert_int_equal(off.marks, 0);
	assert_int_equal(off.throttles, 0);
	assert_true(off.q_max > 0);
	assert_int_equal(on.drops + off.drops, 0);
}

static void test_tel_config(void **state)
{
	char path[] = "/tmp/ssemu-tel-cfg-XXXXXX", err[256];
	struct ssemu_config c, d;
	FILE *f;
	int fd;

	assert_int_equal(ssemu_config_preset("switch", &c), 0);
	assert_int_equal(c.tel_interval, 10 * SSEMU_PS_PER_US);
	d = c;
	d.tel_interval = 20 * SSEMU_PS_PER_US;
	assert_true(ssemu_config_hash(&c) != ssemu_config_hash(&d));
	assert_int_equal(ssemu_config_diff(&c, &d, err, sizeof(err)), 1);
	assert_non_null(strstr(err, "telemetry.interval"));
	d.tel_interval = 50 * SSEMU_PS_PER_NS;
	assert_int_equal(ssemu_config_validate(&d, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "telemetry interval"));
	d.tel_interval = 0;	/* no time series: fine, any ring size */
	d.tel_samples = 0;
	assert_int_equal(ssemu_config_validate(&d, err, sizeof(err)), 0);

	fd = mkstemp(path);
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	fprintf(f, "telemetry = { interval_us = 2.5; samples = 64; };\n");
	fclose(f);
	assert_int_equal(ssemu_config_load(path, &d, err, sizeof(err)), 0);
	assert_int_equal(d.tel_interval, 2500 * SSEMU_PS_PER_NS);
	assert_int_equal(d.tel_samples, 64);
	f = fopen(path, "w");
	fprintf(f, "telemetry = { interval_us = 2.5; sampels = 64; };\n");
	fclose(f);
	assert_int_equal(ssemu_config_load(path, &d, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "sampels: unknown key"));
	f = fopen(path, "w");
	fprintf(f, "telemetry = { samples = 8; };\n");
	fclose(f);
	assert_int_equal(ssemu_config_load(path, &d, err, sizeof(err)),
			 -EINVAL);
	unlink(path);
}

static void write_bytes(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");

	assert_non_null(f);
	assert_int_equal(fwrite(p, 1, n, f), n);
	fclose(f);
}

static void *read_bytes(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	void *p;
	long len;

	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	rewind(f);
	p = malloc((size_t)len);
	assert_non_null(p);
	assert_int_equal(fread(p, 1, (size_t)len, f), (size_t)len);
	fclose(f);
	*n = (size_t)len;
	return p;
}

static void expect_bad(const char *path, const char *why)
{
	struct ssemu_telemetry *tel = NULL;
	char err[512] = "";

	assert_int_equal(ssemu_telemetry_load(path, &tel, err, sizeof(err)),
			 -EPROTO);
	assert_null(tel);
	if (!strstr(err, why))
		fail_msg("expected '%s', got '%s'", why, err);
}

static void test_tel_trace_files(void **state)
{
	static uint8_t buf[8192];
	char dir[] = "/tmp/ssemu-tel-XXXXXX", path[128], bad[128], err[512];
	struct ssemu_telemetry *tel, *back = NULL;
	struct ssemu_config c;
	uint8_t *raw, version;
	size_t n;
	struct tf *t;
	int i;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/run.trace", dir);
	snprintf(bad, sizeof(bad), "%s/bad.trace", dir);
	tf_config(&c, "switch");
	c.tel_interval = 2 * SSEMU_PS_PER_US;
	t = tf_open(&c);
	tf_add(t, 0);
	tf_add(t, 1);
	for (i = 0; i < 50; i++)
		tf_send(t, i & 1, !(i & 1), buf, sizeof(buf), 0, 0, 0);
	tf_run_idle(t, 1000000);
	tel = read_tel(t);
	tf_close(t);
	assert_true(tel->nsamples > 2);
	assert_int_equal(ssemu_telemetry_save(tel, path, err, sizeof(err)), 0);
	assert_int_equal(ssemu_telemetry_load(path, &back, err, sizeof(err)),
			 0);
	assert_int_equal(back->nsamples, tel->nsamples);
	assert_memory_equal(back->jc, tel->jc, sizeof(tel->jc));
	assert_memory_equal(back->samples, tel->samples,
			    tel->nsamples * sizeof(*tel->samples));
	assert_int_equal(back->now, tel->now);
	ssemu_telemetry_free(back);

	raw = read_bytes(path, &n);
	/* a flipped byte in the counters */
	raw[n / 2] ^= 0x40;
	write_bytes(bad, raw, n);
	expect_bad(bad, "checksum");
	raw[n / 2] ^= 0x40;
	/* truncated, and a header alone */
	write_bytes(bad, raw, n - 100);
	expect_bad(bad, "truncated");
	write_bytes(bad, raw, 64);
	expect_bad(bad, "truncated");
	/* another version */
	version = raw[8];
	raw[8] = 99;
	write_bytes(bad, raw, n);
	expect_bad(bad, "version 99");
	raw[8] = version;
	/* a sample count the body does not have */
	raw[24] ^= 1;
	write_bytes(bad, raw, n);
	expect_bad(bad, "sizes disagree");
	raw[24] ^= 1;
	/* not a trace at all, and nothing */
	write_bytes(bad, "telemetry? no, just text\n", 25);
	expect_bad(bad, "bad magic");
	write_bytes(bad, "", 0);
	expect_bad(bad, "bad magic");
	/* unreadable */
	snprintf(bad, sizeof(bad), "%s/missing.trace", dir);
	assert_int_equal(ssemu_telemetry_load(bad, &back, err, sizeof(err)),
			 -ENOENT);
	free(raw);
	ssemu_telemetry_free(tel);
	snprintf(bad, sizeof(bad), "%s/bad.trace", dir);
	unlink(bad);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tel_counts_add_up),
		cmocka_unit_test(test_tel_latency_bins),
		cmocka_unit_test(test_tel_samples_cover_run),
		cmocka_unit_test(test_tel_shares_80_20),
		cmocka_unit_test(test_tel_ring_wrap),
		cmocka_unit_test(test_tel_jobs_overflow),
		cmocka_unit_test(test_tel_cc_counters),
		cmocka_unit_test(test_tel_config),
		cmocka_unit_test(test_tel_trace_files),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
