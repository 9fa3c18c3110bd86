/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Emulator logging: warnings go to stderr unless a sink is installed (the
 * provider installs one that forwards into fi_log).  SSEMU_LOG=info|debug
 * raises the level for standalone runs.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ssemu_priv.h"

static ssemu_log_fn log_sink;

void ssemu_log_set_sink(ssemu_log_fn fn)
{
	log_sink = fn;
}

static enum ssemu_log_level log_level(void)
{
	static int level = -1;
	const char *e;

	if (level < 0) {
		e = getenv("SSEMU_LOG");
		level = SSEMU_LOG_WARN;
		if (e && !strcmp(e, "info"))
			level = SSEMU_LOG_INFO;
		else if (e && !strcmp(e, "debug"))
			level = SSEMU_LOG_DEBUG;
	}
	return (enum ssemu_log_level)level;
}

void ssemu_log(enum ssemu_log_level lvl, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	if (!log_sink && lvl > log_level())
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (log_sink)
		log_sink(lvl, buf);
	else
		fprintf(stderr, "ssemu: %s\n", buf);
}
