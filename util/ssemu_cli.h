/* SPDX-License-Identifier: BSD-2-Clause */
/* Shared pieces of the slingshot-emu command-line tool. */
#ifndef SSEMU_CLI_H
#define SSEMU_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Parse a number in [lo, hi]; print a clear error naming @opt and return
 * -1 on bad input. */
int ssemu_cli_u64(const char *opt, const char *s, uint64_t lo, uint64_t hi,
		  uint64_t *out);
int ssemu_cli_double(const char *opt, const char *s, double lo, double hi,
		     double *out);

struct ssemu_config;

/* ", N local links per switch pair" when a group's switches are joined
 * by more than one link, else "": for the tools' "fabric:" lines. */
const char *ssemu_cli_links_note(const struct ssemu_config *cfg, char *buf,
				 size_t len);

/* The fabric of a model-time experiment: a file or a preset, then the
 * command line's overrides. */
struct ssemu_cli_fabric {
	const char *preset;
	const char *config_path;	/* instead of the preset */
	const char *routing;		/* NULL: the fabric's */
	const char *cc;			/* NULL: the fabric's */
	bool seed_set;
	uint64_t seed;
};

/* The help lines of --routing and --cc, for every command that takes the
 * fabric options: one list of the policies to keep true. */
#define SSEMU_CLI_POLICY_HELP						\
	"  --routing R          minimal | adaptive | ugal | adaptive-nb\n"	\
	"                       (default: the fabric's)\n"			\
	"  --cc C               endpoint-pair | none (default: the fabric's)\n"

/* Fill @cfg as @fo says; a clear message prefixed "@tool: " on error. */
int ssemu_cli_config(const char *tool, const struct ssemu_cli_fabric *fo,
		     struct ssemu_config *cfg);

/*
 * A command's own options, as a table that ssemu_cli_parse() reads: each
 * entry names the option (without "--"), the kind of its argument, the
 * variable it sets and the bounds of its value.  A bad value gets a message
 * naming the option ("--NAME: ...").
 */
enum ssemu_cli_kind {
	SSEMU_CLI_U64,		/* an integer in [lo, hi] */
	SSEMU_CLI_U32,		/* the same, into a uint32_t */
	SSEMU_CLI_DOUBLE,	/* a number in [dlo, dhi] */
	SSEMU_CLI_FLAG,		/* no argument: sets a bool */
	SSEMU_CLI_STR,		/* the argument itself */
	SSEMU_CLI_NAME,		/* one of a table's names: its index */
};

struct ssemu_cli_opt {
	const char *name;
	enum ssemu_cli_kind kind;
	union {
		uint64_t *u64;
		uint32_t *u32;
		double *dbl;
		bool *flag;
		const char **str;
		int *idx;
	};
	uint64_t lo, hi;
	double dlo, dhi;
	/* SSEMU_CLI_U64: a further test of the value; prints why and
	 * returns -EINVAL if it is refused */
	int (*check)(const char *tool, uint64_t v);
	/* SSEMU_CLI_NAME: @count entries of @stride bytes, each beginning
	 * with its name; an unknown value is "unknown @what 'V' (names)"
	 * if @what is set, else "--NAME: unknown value 'V' (names)" */
	const void *names;
	size_t count, stride;
	const char *what;
};

#define SSEMU_CLI_OPT_U64(n, p, l, h)					\
	{ .name = (n), .kind = SSEMU_CLI_U64, .u64 = (p), .lo = (l),	\
	  .hi = (h) }
#define SSEMU_CLI_OPT_U32(n, p, l, h)					\
	{ .name = (n), .kind = SSEMU_CLI_U32, .u32 = (p), .lo = (l),	\
	  .hi = (h) }
#define SSEMU_CLI_OPT_DOUBLE(n, p, l, h)				\
	{ .name = (n), .kind = SSEMU_CLI_DOUBLE, .dbl = (p),		\
	  .dlo = (l), .dhi = (h) }
#define SSEMU_CLI_OPT_FLAG(n, p)					\
	{ .name = (n), .kind = SSEMU_CLI_FLAG, .flag = (p) }
#define SSEMU_CLI_OPT_STR(n, p)						\
	{ .name = (n), .kind = SSEMU_CLI_STR, .str = (p) }
/* @tbl: an array whose elements begin with their name */
#define SSEMU_CLI_OPT_NAME(n, p, tbl, w)				\
	{ .name = (n), .kind = SSEMU_CLI_NAME, .idx = (p), .names = (tbl), \
	  .count = sizeof(tbl) / sizeof((tbl)[0]),			\
	  .stride = sizeof((tbl)[0]), .what = (w) }

/*
 * A command's command line: the shared options (--preset, --config,
 * --routing, --cc and --seed into @fab; --scenario; --help), then @opts,
 * ended by an entry whose name is NULL.  `--scenario FILE` takes the options
 * of FILE's `# TOOL: OPTIONS` comment line, before the command line's, and
 * FILE as --config.
 */
struct ssemu_cli_cmd {
	const char *tool;
	struct ssemu_cli_fabric *fab;
	const struct ssemu_cli_opt *opts;
	void (*usage)(FILE *f);
	/* holds a --scenario line's words, which string options point
	 * into: it lives as long as the options do */
	char *line;
	size_t line_len;
};

#define SSEMU_CLI_RUN (-1)
#define SSEMU_CLI_LINE_MAX 4096	/* a --scenario line */

/*
 * Read @argv into the variables of @cmd's table, which hold their defaults.
 * @return SSEMU_CLI_RUN to go on, else the status the command exits with:
 * 0 after --help, 2 after a bad option (a message names it), 1 out of
 * memory.
 */
int ssemu_cli_parse(const struct ssemu_cli_cmd *cmd, int argc, char **argv);

int ssemu_cmd_sim(int argc, char **argv);
int ssemu_cmd_share(int argc, char **argv);
int ssemu_cmd_impact(int argc, char **argv);
int ssemu_cmd_status(int argc, char **argv);
int ssemu_cmd_stat(int argc, char **argv);
int ssemu_cmd_clean(int argc, char **argv);
int ssemu_cmd_run(int argc, char **argv);
int ssemu_cmd_mpirun(int argc, char **argv);
int ssemu_cmd_report(int argc, char **argv);
int ssemu_cmd_service(int argc, char **argv);

/* ssemu_service.c: the VNI counters (per job drops, per switch VNIs), if
 * any VNI but the default one was used; in JSON, as more members of the
 * object being printed. */
struct ssemu_fabric;
void ssemu_cli_vni_stat(struct ssemu_fabric *f, bool json);
/* The same for the shared fabric @name, opened as an observer (report). */
void ssemu_cli_vni_report(const char *name);

/* run/mpirun --vni N [--service ID]: the job's VNI and service. */
struct ssemu_cli_job_auth {
	uint32_t vni;		/* 0: not asked */
	uint32_t svc;		/* 0: a service of the job's own */
	bool made;		/* ... which begin created */
	bool share;		/* --share-group: a fabric it creates is */
	uint32_t share_gid;	/* ... shared with this group (0660) */
};

/* Take leading --vni/--service/--share-group options of @argv from
 * *@first on; -1 after a message. */
int ssemu_cli_job_auth_opts(int argc, char **argv, int *first,
			    struct ssemu_cli_job_auth *ja);
/* Create the job's service if it has none, and set SLINGSHOT_VNIS,
 * SLINGSHOT_SVC_IDS, SLINGSHOT_DEVICES for it. */
int ssemu_cli_job_auth_begin(struct ssemu_fabric *f,
			     struct ssemu_cli_job_auth *ja);
/* Remove the service begin created. */
void ssemu_cli_job_auth_end(struct ssemu_fabric *f,
			    const struct ssemu_cli_job_auth *ja);

#endif
