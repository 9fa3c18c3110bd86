/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The sim tool's traffic does not depend on how many events the model
 * takes.  Open-loop sources on a small fabric loaded past saturation run
 * out of message slots; the run is made as it is and again with the
 * model's test switches that add events (looks and kicks that find
 * nothing to do, credits returned as events) or reorder them: every line
 * of the report must be the same but the model's own (its event count
 * and the time of its last event).  A source out of slots keeps the
 * messages it drew and posts them when a slot frees, whatever the events
 * in between.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "ssemu_cli.h"
#include "ssemu_model_int.h"

/* Watches set by the sim (linked with --wrap=ssemu_ep_watch): how the
 * test knows its sources did run out of slots. */
static unsigned watches;
int __real_ssemu_ep_watch(struct ssemu_ep *ep, bool on);
int __wrap_ssemu_ep_watch(struct ssemu_ep *ep, bool on);

int __wrap_ssemu_ep_watch(struct ssemu_ep *ep, bool on)
{
	watches += on;
	return __real_ssemu_ep_watch(ep, on);
}

/* The report of `sim` with @argv, as it writes it to standard output,
 * into @out (at most @cap bytes, NUL-terminated). */
static void run_sim(char **argv, int argc, char *out, size_t cap)
{
	char path[] = "/tmp/test_sim-XXXXXX";
	int fd = mkstemp(path), saved;
	ssize_t got;

	assert_true(fd >= 0);
	unlink(path);
	fflush(stdout);
	saved = dup(STDOUT_FILENO);
	assert_true(saved >= 0);
	assert_true(dup2(fd, STDOUT_FILENO) >= 0);
	assert_int_equal(ssemu_cmd_sim(argc, argv), 0);
	fflush(stdout);
	assert_true(dup2(saved, STDOUT_FILENO) >= 0);
	close(saved);
	assert_true(lseek(fd, 0, SEEK_SET) == 0);
	got = read(fd, out, cap - 1);
	close(fd);
	assert_true(got > 0 && (size_t)got < cap - 1);
	out[got] = 0;
}

/* The line of @report that starts with @key, into @line. */
static void line_of(const char *report, const char *key, char *line,
		    size_t cap)
{
	const char *p = strstr(report, key), *e;

	assert_non_null(p);
	e = strchr(p, '\n');
	assert_non_null(e);
	assert_true((size_t)(e - p) < cap);
	memcpy(line, p, (size_t)(e - p));
	line[e - p] = 0;
}

/* @report without its "model:" line. */
static void strip_model(char *report)
{
	char *p = strstr(report, "model:"), *e;

	assert_non_null(p);
	e = strchr(p, '\n');
	assert_non_null(e);
	memmove(p, e + 1, strlen(e + 1) + 1);
}

static unsigned long long events_of(const char *report)
{
	const char *p = strstr(report, "events ");

	assert_non_null(p);
	return strtoull(p + 7, NULL, 10);
}

static void test_sim_invariant(void **state)
{
	static const struct {
		const char *name;
		uint32_t *hook;
		bool more_events;
	} hooks[] = {
		{ "extra looks", &ssemu_model_extra_looks, true },
		{ "credit events", &ssemu_model_credit_events, true },
		{ "events scheduled in reverse", &ssemu_model_perturb, false },
		{ "fresh places", &ssemu_model_fresh_places, false },
	};
	char *argv[] = { "sim", "--preset", "2group", "--load", "0.9",
			 "--time", "10", NULL };
	static char base[8192], other[8192];
	char line[256];
	unsigned long long ev0;
	size_t i;

	(void)state;
	run_sim(argv, 7, base, sizeof(base));
	/* sources ran out of slots and waited */
	assert_true(watches > 10);
	/* traffic went */
	line_of(base, "messages:", line, sizeof(line));
	assert_null(strstr(line, "sent 0,"));
	assert_non_null(strstr(line, "failed 0"));
	ev0 = events_of(base);
	strip_model(base);
	for (i = 0; i < ARRAY_SIZE(hooks); i++) {
		*hooks[i].hook = 1;
		run_sim(argv, 7, other, sizeof(other));
		*hooks[i].hook = 0;
		/* the switch did change the model's events */
		if (hooks[i].more_events)
			assert_true(events_of(other) > ev0 + ev0 / 4);
		strip_model(other);
		if (strcmp(base, other))
			fail_msg("sim's report differs with %s:\n%s\n--- "
				 "against ---\n%s", hooks[i].name, other,
				 base);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sim_invariant),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
