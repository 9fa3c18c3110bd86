/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the slingshot-emu commands share on their command line: number
 * parsing, the fabric options, `--scenario FILE`, and one parser that reads
 * a command's table of options.
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <slingshot_emu/ssemu.h>

#include "ssemu_cli.h"
#include "ssemu_compiler.h"

int ssemu_cli_u64(const char *opt, const char *s, uint64_t lo, uint64_t hi,
		  uint64_t *out)
{
	unsigned long long v;
	char *end;

	errno = 0;
	if (!s || !*s || *s == '-')
		goto bad;
	v = strtoull(s, &end, 0);
	if (errno || *end)
		goto bad;
	if (v < lo || v > hi) {
		fprintf(stderr, "%s: %llu is out of range [%llu, %llu]\n", opt,
			v, (unsigned long long)lo, (unsigned long long)hi);
		return -1;
	}
	*out = v;
	return 0;
bad:
	fprintf(stderr, "%s: '%s' is not a non-negative integer\n", opt,
		s ? s : "");
	return -1;
}

int ssemu_cli_double(const char *opt, const char *s, double lo, double hi,
		     double *out)
{
	double v;
	char *end;

	errno = 0;
	if (!s || !*s)
		goto bad;
	v = strtod(s, &end);
	if (errno || *end || v != v)
		goto bad;
	if (v < lo || v > hi) {
		fprintf(stderr, "%s: %g is out of range [%g, %g]\n", opt, v, lo,
			hi);
		return -1;
	}
	*out = v;
	return 0;
bad:
	fprintf(stderr, "%s: '%s' is not a number\n", opt, s ? s : "");
	return -1;
}

const char *ssemu_cli_links_note(const struct ssemu_config *cfg, char *buf,
				 size_t len)
{
	if (cfg->topo.local_links_per_pair <= 1)
		return "";
	snprintf(buf, len, ", %u local links per switch pair",
		 cfg->topo.local_links_per_pair);
	return buf;
}

#define SCEN_MAX_ARGS 64

/* The words of FILE's `# TOOL:` line, in @buf. */
static int scenario_read(const char *tool, const char *path, char *buf,
			 size_t len, char **words, int *nwords)
{
	FILE *f = fopen(path, "r");
	char key[64], *p, *tok, *save = NULL;
	bool found = false;
	size_t klen;
	int err;

	if (!f) {
		err = errno;
		fprintf(stderr, "%s: --scenario %s: %s\n", tool, path,
			strerror(err));
		return -err;
	}
	snprintf(key, sizeof(key), "# %s:", tool);
	klen = strlen(key);
	while (fgets(buf, (int)len, f)) {
		p = buf;
		while (*p == ' ' || *p == '\t')
			p++;
		if (!strncmp(p, key, klen)) {
			memmove(buf, p + klen, strlen(p + klen) + 1);
			found = true;
			break;
		}
	}
	fclose(f);
	if (!found) {
		fprintf(stderr, "%s: --scenario %s: no '%s' line\n", tool,
			path, key);
		return -EINVAL;
	}
	*nwords = 0;
	for (tok = strtok_r(buf, " \t\r\n", &save); tok;
	     tok = strtok_r(NULL, " \t\r\n", &save)) {
		if (*nwords >= SCEN_MAX_ARGS) {
			fprintf(stderr, "%s: --scenario %s: too many "
				"options\n", tool, path);
			return -E2BIG;
		}
		if (!strcmp(tok, "--scenario") || !strcmp(tok, "--config") ||
		    !strcmp(tok, "--preset")) {
			fprintf(stderr, "%s: --scenario %s: %s is not "
				"allowed in a scenario line (the file is the "
				"fabric)\n", tool, path, tok);
			return -EINVAL;
		}
		words[(*nwords)++] = tok;
	}
	return 0;
}

/*
 * `--scenario FILE` in @argv: FILE is a fabric configuration whose
 * `# TOOL: OPTIONS` comment line holds the experiment's options.  Returns 0
 * with *@nargv NULL when there is no --scenario; else 0 with *@nargv (free
 * it) holding argv[0], "--config FILE", the file's options (words in
 * @line), then argv[1..] (the command line overrides the file).  On error
 * prints a message naming the file and returns -errno.
 */
static int cli_scenario(const char *tool, int argc, char **argv, char *line,
			size_t len, char ***nargv, int *nargc)
{
	char *words[SCEN_MAX_ARGS];
	const char *scenario = NULL;
	int nwords = 0, i, j, n, ret;
	char **v;

	*nargv = NULL;
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--scenario")) {
			if (i + 1 >= argc) {
				fprintf(stderr, "%s: --scenario needs a "
					"file\n", tool);
				return -EINVAL;
			}
			scenario = argv[i + 1];
		} else if (!strncmp(argv[i], "--scenario=", 11)) {
			scenario = argv[i] + 11;
		}
	}
	if (!scenario)
		return 0;
	ret = scenario_read(tool, scenario, line, len, words, &nwords);
	if (ret)
		return ret;
	v = calloc((size_t)(argc + nwords + 4), sizeof(char *));
	if (!v)
		return -ENOMEM;
	n = 0;
	v[n++] = argv[0];
	v[n++] = (char *)"--config";
	v[n++] = (char *)scenario;
	for (j = 0; j < nwords; j++)
		v[n++] = words[j];
	for (i = 1; i < argc; i++)
		v[n++] = argv[i];
	*nargv = v;
	*nargc = n;
	return 0;
}

/* The command-line options of @fo, for a getopt_long table. */
#define CLI_FABRIC_OPTIONS					\
	{ "preset", required_argument, NULL, 'p' },			\
	{ "config", required_argument, NULL, 'c' },			\
	{ "routing", required_argument, NULL, 'R' },			\
	{ "cc", required_argument, NULL, 'C' },				\
	{ "seed", required_argument, NULL, 'S' }

/*
 * Option @c (its argument @arg) into @fo if it is one of
 * CLI_FABRIC_OPTIONS; the later of --preset and --config wins.
 * @return 1 if it was, 0 if it is another option, -EINVAL for a bad value
 * (a message names it).
 */

static int cli_fabric_opt(int c, const char *arg, struct ssemu_cli_fabric *fo)
{
	switch (c) {
	case 'p':
		fo->preset = arg;
		fo->config_path = NULL;
		return 1;
	case 'c':
		fo->config_path = arg;
		return 1;
	case 'R':
		fo->routing = arg;
		return 1;
	case 'C':
		fo->cc = arg;
		return 1;
	case 'S':
		if (ssemu_cli_u64("--seed", arg, 0, UINT64_MAX, &fo->seed))
			return -EINVAL;
		fo->seed_set = true;
		return 1;
	default:
		return 0;
	}
}

int ssemu_cli_config(const char *tool, const struct ssemu_cli_fabric *fo,
		     struct ssemu_config *cfg)
{
	char err[256];
	int ret;

	if (fo->config_path) {
		ret = ssemu_config_load(fo->config_path, cfg, err, sizeof(err));
		if (ret) {
			fprintf(stderr, "%s: %s\n", tool, err);
			return ret;
		}
	} else if (ssemu_config_preset(fo->preset, cfg)) {
		fprintf(stderr, "%s: unknown preset '%s' (try: ", tool,
			fo->preset);
		for (const char *const *p = ssemu_config_preset_names(); *p; p++)
			fprintf(stderr, "%s%s", *p, p[1] ? ", " : ")\n");
		return -EINVAL;
	}
	if (fo->seed_set)
		cfg->seed = fo->seed;
	if (fo->routing)
		snprintf(cfg->routing, sizeof(cfg->routing), "%s",
			 fo->routing);
	if (fo->cc)
		snprintf(cfg->cc, sizeof(cfg->cc), "%s", fo->cc);
	return 0;
}

/* The name of entry @i of @o's table of names. */
static const char *opt_name_at(const struct ssemu_cli_opt *o, size_t i)
{
	return *(const char *const *)((const char *)o->names + i * o->stride);
}

static int opt_pick(const char *tool, const struct ssemu_cli_opt *o,
		    const char *arg)
{
	size_t i;

	for (i = 0; i < o->count; i++)
		if (!strcmp(arg, opt_name_at(o, i)))
			return (int)i;
	if (o->what)
		fprintf(stderr, "%s: unknown %s '%s' (", tool, o->what, arg);
	else
		fprintf(stderr, "%s: --%s: unknown value '%s' (", tool,
			o->name, arg);
	for (i = 0; i < o->count; i++)
		fprintf(stderr, "%s%s", opt_name_at(o, i),
			i + 1 < o->count ? ", " : ")\n");
	return -1;
}

/* Option @o's argument @arg into its variable; -EINVAL (said) if bad. */
static int opt_set(const char *tool, const struct ssemu_cli_opt *o,
		   const char *arg)
{
	char flag[64];
	uint64_t u;
	int i;

	snprintf(flag, sizeof(flag), "--%s", o->name);
	switch (o->kind) {
	case SSEMU_CLI_U64:
		if (ssemu_cli_u64(flag, arg, o->lo, o->hi, &u))
			return -EINVAL;
		if (o->check && o->check(tool, u))
			return -EINVAL;
		*o->u64 = u;
		return 0;
	case SSEMU_CLI_U32:
		if (ssemu_cli_u64(flag, arg, o->lo, o->hi, &u))
			return -EINVAL;
		*o->u32 = (uint32_t)u;
		return 0;
	case SSEMU_CLI_DOUBLE:
		return ssemu_cli_double(flag, arg, o->dlo, o->dhi, o->dbl) ?
			       -EINVAL : 0;
	case SSEMU_CLI_FLAG:
		*o->flag = true;
		return 0;
	case SSEMU_CLI_STR:
		*o->str = arg;
		return 0;
	case SSEMU_CLI_NAME:
		i = opt_pick(tool, o, arg);
		if (i < 0)
			return -EINVAL;
		*o->idx = i;
		return 0;
	}
	return -EINVAL;
}

#define CLI_MAX_OPTS 48
#define CLI_OPT_BASE 256	/* getopt values of a command's own options */

static int cli_parse(const struct ssemu_cli_cmd *cmd, int argc, char **argv)
{
	static const struct option shared[] = { CLI_FABRIC_OPTIONS };
	struct option lo[ARRAY_SIZE(shared) + CLI_MAX_OPTS + 3];
	size_t n = 0, i;
	int c, ret;

	for (i = 0; i < ARRAY_SIZE(shared); i++)
		lo[n++] = shared[i];
	for (i = 0; cmd->opts[i].name; i++) {
		if (i >= CLI_MAX_OPTS)
			return -E2BIG;
		lo[n++] = (struct option){
			cmd->opts[i].name,
			cmd->opts[i].kind == SSEMU_CLI_FLAG ? no_argument :
							      required_argument,
			NULL, CLI_OPT_BASE + (int)i
		};
	}
	lo[n++] = (struct option){ "scenario", required_argument, NULL, 'F' };
	lo[n++] = (struct option){ "help", no_argument, NULL, 'h' };
	lo[n] = (struct option){ 0 };
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		ret = cli_fabric_opt(c, optarg, cmd->fab);
		if (ret < 0)
			return -EINVAL;
		if (ret)
			continue;
		if (c >= CLI_OPT_BASE) {
			if (opt_set(cmd->tool, &cmd->opts[c - CLI_OPT_BASE],
				    optarg))
				return -EINVAL;
			continue;
		}
		switch (c) {
		case 'F':
			/* read by cli_scenario() before parsing */
			break;
		case 'h':
			cmd->usage(stdout);
			return 1;
		default:
			cmd->usage(stderr);
			return -EINVAL;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "%s: unexpected argument '%s'\n", cmd->tool,
			argv[optind]);
		return -EINVAL;
	}
	return 0;
}

int ssemu_cli_parse(const struct ssemu_cli_cmd *cmd, int argc, char **argv)
{
	char **nargv = NULL;
	int nargc, ret;

	ret = cli_scenario(cmd->tool, argc, argv, cmd->line,
				 cmd->line_len, &nargv, &nargc);
	if (ret)
		return ret == -ENOMEM ? 1 : 2;
	ret = nargv ? cli_parse(cmd, nargc, nargv) : cli_parse(cmd, argc, argv);
	free(nargv);
	if (ret)
		return ret > 0 ? 0 : 2;
	return SSEMU_CLI_RUN;
}
