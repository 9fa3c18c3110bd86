/* SPDX-License-Identifier: BSD-2-Clause */
/* Shared pieces of the slingshot-emu command-line tool. */
#ifndef SSEMU_CLI_H
#define SSEMU_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Parse a number in [lo, hi]; print a clear error naming @opt and return
 * -1 on bad input. */
int ssemu_cli_u64(const char *opt, const char *s, uint64_t lo, uint64_t hi,
		  uint64_t *out);
int ssemu_cli_double(const char *opt, const char *s, double lo, double hi,
		     double *out);

/*
 * Size an in-process fabric for @n endpoints, one NIC and one endpoint
 * each, messages of up to @msg_bytes and about @pkts_per_nic packets in
 * flight per NIC (within the store's limits).
 */
struct ssemu_config;
void ssemu_cli_size_fabric(struct ssemu_config *cfg, uint64_t n,
			   uint64_t msg_bytes, uint64_t pkts_per_nic);

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

/* The command-line options of @fo, for a getopt_long table. */
#define SSEMU_CLI_FABRIC_OPTIONS					\
	{ "preset", required_argument, NULL, 'p' },			\
	{ "config", required_argument, NULL, 'c' },			\
	{ "routing", required_argument, NULL, 'R' },			\
	{ "cc", required_argument, NULL, 'C' },				\
	{ "seed", required_argument, NULL, 'S' }

/* The help lines of --routing and --cc, for every tool that takes
 * SSEMU_CLI_FABRIC_OPTIONS: one list of the policies to keep true. */
#define SSEMU_CLI_POLICY_HELP						\
	"  --routing R          minimal | adaptive | ugal | adaptive-nb\n"	\
	"                       (default: the fabric's)\n"			\
	"  --cc C               endpoint-pair | none (default: the fabric's)\n"

/*
 * Option @c (its argument @arg) into @fo if it is one of
 * SSEMU_CLI_FABRIC_OPTIONS; the later of --preset and --config wins.
 * @return 1 if it was, 0 if it is another option, -EINVAL for a bad value
 * (a message names it).
 */
int ssemu_cli_fabric_opt(int c, const char *arg, struct ssemu_cli_fabric *fo);

/* Fill @cfg as @fo says; a clear message prefixed "@tool: " on error. */
int ssemu_cli_config(const char *tool, const struct ssemu_cli_fabric *fo,
		     struct ssemu_config *cfg);

/*
 * Validate @cfg (sized already), open it as a private in-process fabric
 * and attach ports 0..@n-1, one NIC and one endpoint each; @job, if given,
 * sets a port's job and rank.  On error the message names @tool and what
 * failed; whatever was opened is in the out parameters for
 * ssemu_cli_close().
 */
struct ssemu_fabric;
struct ssemu_nic;
struct ssemu_ep;
struct ssemu_nic_opts;
int ssemu_cli_open(const char *tool, struct ssemu_config *cfg, uint64_t n,
		   void (*job)(uint64_t port, struct ssemu_nic_opts *no),
		   struct ssemu_fabric **fab, struct ssemu_nic ***nics,
		   struct ssemu_ep ***eps);
void ssemu_cli_close(uint64_t n, struct ssemu_fabric *fab,
		     struct ssemu_nic **nics, struct ssemu_ep **eps);

/*
 * `--scenario FILE` in @argv: FILE is a fabric configuration whose
 * `# TOOL: OPTIONS` comment line holds the experiment's options.  Returns 0
 * with *@nargv NULL when there is no --scenario; else 0 with *@nargv (free
 * it) holding argv[0], "--config FILE", the file's options (words in
 * @line), then argv[1..] (the command line overrides the file).  On error
 * prints a message naming the file and returns -errno.
 */
int ssemu_cli_scenario(const char *tool, int argc, char **argv, char *line,
		       size_t len, char ***nargv, int *nargc);

int ssemu_cmd_sim(int argc, char **argv);
int ssemu_cmd_share(int argc, char **argv);
int ssemu_cmd_impact(int argc, char **argv);
int ssemu_cmd_status(int argc, char **argv);
int ssemu_cmd_stat(int argc, char **argv);
int ssemu_cmd_clean(int argc, char **argv);
int ssemu_cmd_run(int argc, char **argv);
int ssemu_cmd_mpirun(int argc, char **argv);
int ssemu_cmd_report(int argc, char **argv);

#endif
