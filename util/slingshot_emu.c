/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * slingshot-emu: the command-line tool of the emulated Slingshot fabric.
 * Subcommands: sim (synthetic traffic on an in-process fabric), impact
 * and share (congestion and class studies in model time), status,
 * stat and clean (shared fabrics), run and mpirun (jobs on a held fabric),
 * report (telemetry), presets.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <slingshot_emu/ssemu.h>

#include "ssemu_cli.h"

static int cmd_presets(int argc, char **argv)
{
	const char *const *p;
	struct ssemu_config c;

	for (p = ssemu_config_preset_names(); *p; p++) {
		ssemu_config_preset(*p, &c);
		printf("%-8s %4u groups x %2u switches x %2u endpoints, "
		       "%2u global links/switch: %llu endpoints\n", *p,
		       c.topo.groups, c.topo.switches_per_group,
		       c.topo.endpoints_per_switch, c.topo.globals_per_switch,
		       (unsigned long long)ssemu_config_nports(&c));
	}
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: slingshot-emu COMMAND [options]\n"
		"\n"
		"commands:\n"
		"  sim       run synthetic traffic on an in-process fabric and\n"
		"            report latency and throughput in model time\n"
		"  impact    congestion impact (GPCNeT style): victim latency\n"
		"            with aggressors / alone, in model time\n"
		"  share     two jobs in traffic classes share the links they\n"
		"            cross (the paper's Figure 14), in model time\n"
		"  status    list shared fabrics: configuration, clock mode,\n"
		"            lag, attached NICs (pid, job, rank, port)\n"
		"  stat      live counters of a shared fabric per NIC, switch\n"
		"            port and traffic class\n"
		"  clean     remove shared fabrics no live process uses\n"
		"  run       run a command on a shared fabric held by the tool,\n"
		"            then print what the fabric saw\n"
		"  mpirun    run an MPI program over the slingshot_emu provider\n"
		"            (adds and prints the Open MPI options it needs)\n"
		"  report    telemetry of a shared fabric or a saved trace:\n"
		"            bandwidth and latency per job and class, CSV,\n"
		"            gnuplot plots\n"
		"  service   the services of a shared fabric (VNIs, classes,\n"
		"            users): add, list, rm\n"
		"  presets   list the built-in fabric presets\n"
		"  help      this text\n"
		"\n"
		"`slingshot-emu COMMAND --help` describes each command.\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "sim"))
		return ssemu_cmd_sim(argc - 1, argv + 1);
	if (!strcmp(argv[1], "impact"))
		return ssemu_cmd_impact(argc - 1, argv + 1);
	if (!strcmp(argv[1], "share"))
		return ssemu_cmd_share(argc - 1, argv + 1);
	if (!strcmp(argv[1], "status"))
		return ssemu_cmd_status(argc - 1, argv + 1);
	if (!strcmp(argv[1], "stat"))
		return ssemu_cmd_stat(argc - 1, argv + 1);
	if (!strcmp(argv[1], "clean"))
		return ssemu_cmd_clean(argc - 1, argv + 1);
	if (!strcmp(argv[1], "run"))
		return ssemu_cmd_run(argc - 1, argv + 1);
	if (!strcmp(argv[1], "mpirun"))
		return ssemu_cmd_mpirun(argc - 1, argv + 1);
	if (!strcmp(argv[1], "report"))
		return ssemu_cmd_report(argc - 1, argv + 1);
	if (!strcmp(argv[1], "service"))
		return ssemu_cmd_service(argc - 1, argv + 1);
	if (!strcmp(argv[1], "presets"))
		return cmd_presets(argc - 1, argv + 1);
	if (!strcmp(argv[1], "help") || !strcmp(argv[1], "--help") ||
	    !strcmp(argv[1], "-h")) {
		usage(stdout);
		return 0;
	}
	fprintf(stderr, "slingshot-emu: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}
