/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sse_init.c: the provider's entry point (fi_prov_ini), its struct
 * fi_provider and every runtime parameter.  All FI_SLINGSHOT_EMU_* variables
 * are defined here, with their defaults in the help text (fi_info -e shows
 * them), and gathered into sse_env.  man/fi_slingshot_emu.7.md lists exactly
 * this set.
 */
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <unistd.h>

#include "sse.h"

struct sse_env sse_env = {
	.store = NULL,
	.fabric = NULL,
	.preset = NULL,
	.config = NULL,
	.tclass = NULL,
	.port = -1,
	.clock = NULL,
	.dilation = NULL,	/* unset: the configuration's */
	.eager_max = 16384,
	.rndv_read = true,
	.tx_size = 16384,
	.rx_size = 16384,
	.progress_budget = 256,
	.service_wait = 5000,
	.close_timeout = SSEMU_CLOSE_DRAIN_MS,
};

static char sse_default_fabric[64];

const char *sse_default_fabric_name(void)
{
	return sse_env.fabric ? sse_env.fabric : sse_default_fabric;
}

/* Emulator warnings and information go to fi_log. */
static void sse_emu_log(enum ssemu_log_level lvl, const char *msg)
{
	switch (lvl) {
	case SSEMU_LOG_WARN:
		SSE_WARN(FI_LOG_FABRIC, "emulator: %s\n", msg);
		break;
	case SSEMU_LOG_INFO:
		SSE_INFO(FI_LOG_FABRIC, "emulator: %s\n", msg);
		break;
	default:
		SSE_DBG(FI_LOG_FABRIC, "emulator: %s\n", msg);
		break;
	}
}

int sse_env_store(enum ssemu_store *store)
{
	const char *s = sse_env.store ? sse_env.store : "shm";

	if (!strcasecmp(s, "shm")) {
		*store = SSEMU_STORE_SHM;
	} else if (!strcasecmp(s, "private")) {
		*store = SSEMU_STORE_PRIVATE;
	} else {
		SSE_WARN(FI_LOG_CORE,
			 "FI_SLINGSHOT_EMU_STORE=%s: expected shm or private\n",
			 s);
		return -FI_EINVAL;
	}
	return 0;
}

/*
 * The fabric configuration the environment asks for: a configuration file
 * (FI_SLINGSHOT_EMU_CONFIG) or a preset, then the clock settings on top.
 * It only matters to the process that creates the fabric; the others
 * must ask for the same one or fi_fabric fails.
 */
int sse_env_config(struct ssemu_config *cfg)
{
	char err[256] = "";

	/* the same reading as the slingshot-emu tool's (ssemu.h) */
	if (ssemu_config_select(sse_env.config, sse_env.preset, sse_env.clock,
				sse_env.dilation, cfg, err, sizeof(err))) {
		SSE_WARN(FI_LOG_CORE, "fabric configuration (%s%s): %s\n",
			 sse_env.config ? "FI_SLINGSHOT_EMU_CONFIG=" :
					  "FI_SLINGSHOT_EMU_PRESET=",
			 sse_env.config ? sse_env.config :
			 sse_env.preset ? sse_env.preset : "switch", err);
		return -FI_EINVAL;
	}
	return 0;
}

static char *sse_param_str(const char *name)
{
	char *val = NULL;

	if (fi_param_get_str(&sse_prov, name, &val) || !val || !*val)
		return NULL;
	return strdup(val);
}

static void sse_param_size(const char *name, size_t *out)
{
	size_t val;

	if (!fi_param_get_size_t(&sse_prov, name, &val))
		*out = val;
}

/* The preset list comes from the emulator, so the help cannot drift. */
static const char *sse_preset_help(void)
{
	static char help[512];
	const char *const *names = ssemu_config_preset_names();
	size_t off;

	off = (size_t)snprintf(help, sizeof(help),
			       "Fabric configuration preset used when a process creates the fabric (");
	for (; names && *names && off < sizeof(help); names++)
		off += (size_t)snprintf(help + off, sizeof(help) - off, "%s%s",
					*names, names[1] ? ", " : "");
	if (off < sizeof(help))
		snprintf(help + off, sizeof(help) - off, "). Default: switch");
	return help;
}

static void sse_init_env(void)
{
	size_t seed;
	int ival;

	fi_param_define(&sse_prov, "store", FI_PARAM_STRING,
			"Where the emulated fabric lives: shm (a POSIX shared-memory segment every process of the user can attach to) or private (this process only). Default: shm");
	fi_param_define(&sse_prov, "fabric", FI_PARAM_STRING,
			"Name of the fabric (the shm segment); processes naming the same fabric share its switches and links. Default: ssemu-<uid>");
	fi_param_define(&sse_prov, "preset", FI_PARAM_STRING,
			sse_preset_help());
	fi_param_define(&sse_prov, "config", FI_PARAM_STRING,
			"Path of a fabric configuration file (libconfig syntax, see docs/fabric-config.md); replaces the preset. Default: unset");
	fi_param_define(&sse_prov, "tclass", FI_PARAM_STRING,
			"Traffic class (name in the fabric's class table, e.g. LOW_LATENCY) of endpoints that ask for FI_TC_UNSPEC. Default: the fabric's default class");
	fi_param_define(&sse_prov, "port", FI_PARAM_INT,
			"Fabric port (endpoint index of the topology) the process's NIC attaches to; -1 lets the emulator place it (FI_SLINGSHOT_EMU_PLACEMENT). Default: -1");
	fi_param_define(&sse_prov, "placement", FI_PARAM_STRING,
			"Port placement of the NICs of a job whose launcher gives rank, job size and job id (Open MPI, PMIx, PMI, Slurm): first-free, linear (a block of consecutive ports), interleaved (consecutive ranks on different switches and groups), random (seeded) or map:<file> (lines \"rank port\"). The job's first rank reserves ports for all its ranks. Default: first-free");
	fi_param_define(&sse_prov, "placement_seed", FI_PARAM_SIZE_T,
			"Seed of random placement. Default: the fabric's seed");
	fi_param_define(&sse_prov, "clock", FI_PARAM_STRING,
			"Clock mode of a fabric this process creates: virtual (as fast as possible) or realtime (model time tied to wall time). Default: the preset's (virtual)");
	fi_param_define(&sse_prov, "dilation", FI_PARAM_STRING,
			"Realtime clock: wall-clock ns per model ns (a real number > 0). Default: the configuration's (1.0)");
	fi_param_define(&sse_prov, "eager_max", FI_PARAM_SIZE_T,
			"Largest message sent eagerly; longer messages use rendezvous (the data moves only once the receive is matched). Default: 16384");
	fi_param_define(&sse_prov, "rndv_read", FI_PARAM_BOOL,
			"Rendezvous by receiver reads: a sender above eager_max exposes its buffer (one segment) to the receiver's reads, modelled as read traffic; 0: the data is pushed once the receive is matched (a receiver set to 0 asks senders offering reads to push). Default: 1");
	fi_param_define(&sse_prov, "tx_size", FI_PARAM_SIZE_T,
			"Sends outstanding per endpoint (tx_attr->size); more return -FI_EAGAIN. Default: 16384");
	fi_param_define(&sse_prov, "rx_size", FI_PARAM_SIZE_T,
			"Receives posted per endpoint (rx_attr->size); more return -FI_EAGAIN. Default: 16384");
	fi_param_define(&sse_prov, "progress_budget", FI_PARAM_INT,
			"Emulator events processed per progress call. Default: 256");
	fi_param_define(&sse_prov, "service_wait", FI_PARAM_INT,
			"Milliseconds fi_av_insert (and fi_av_insertsvc) waits for a service named by fi_getinfo's node/service to be bound by the endpoint that serves it, before the address fails as -FI_EADDRNOTAVAIL; 0 does not wait. Default: 5000");
	fi_param_define(&sse_prov, "close_timeout", FI_PARAM_INT,
			"Milliseconds fi_close of an endpoint waits, at most, for the messages and RMA operations it accepted to be delivered (they are the NIC's: injected sends included); what is left after that is discarded with a warning and counted. 0: discard at once. Default: 5000");
	fi_param_define(&sse_prov, "model_stats", FI_PARAM_BOOL,
			"Time the emulator's engine runs this process makes and print them, with the NIC's message counts and the fabric's event count, on stderr when a domain closes (one line starting \"slingshot_emu model_stats:\"). Default: 0");

	sse_env.store = sse_param_str("store");
	sse_env.fabric = sse_param_str("fabric");
	sse_env.preset = sse_param_str("preset");
	sse_env.config = sse_param_str("config");
	sse_env.tclass = sse_param_str("tclass");
	sse_env.clock = sse_param_str("clock");
	if (!fi_param_get_int(&sse_prov, "port", &ival))
		sse_env.port = ival;
	sse_env.dilation = sse_param_str("dilation");
	sse_env.placement = sse_param_str("placement");
	if (!fi_param_get_size_t(&sse_prov, "placement_seed", &seed)) {
		sse_env.placement_seed = seed;
		sse_env.placement_seed_set = true;
	}
	sse_param_size("eager_max", &sse_env.eager_max);
	if (!fi_param_get_bool(&sse_prov, "rndv_read", &ival))
		sse_env.rndv_read = ival != 0;
	sse_param_size("tx_size", &sse_env.tx_size);
	sse_param_size("rx_size", &sse_env.rx_size);
	if (!fi_param_get_int(&sse_prov, "progress_budget", &ival) && ival > 0)
		sse_env.progress_budget = ival;
	if (!fi_param_get_int(&sse_prov, "service_wait", &ival) && ival >= 0)
		sse_env.service_wait = ival;
	if (!fi_param_get_int(&sse_prov, "close_timeout", &ival) && ival >= 0)
		sse_env.close_timeout = ival;
	if (!fi_param_get_bool(&sse_prov, "model_stats", &ival))
		sse_env.model_stats = ival != 0;
	if (!sse_env.tx_size)
		sse_env.tx_size = 1;
	if (!sse_env.rx_size)
		sse_env.rx_size = 1;

	snprintf(sse_default_fabric, sizeof(sse_default_fabric), "ssemu-%u",
		 (unsigned)getuid());
}

static void sse_cleanup(void)
{
	ssemu_log_set_sink(NULL);
	free(sse_env.store);
	free(sse_env.fabric);
	free(sse_env.preset);
	free(sse_env.config);
	free(sse_env.tclass);
	free(sse_env.clock);
	free(sse_env.dilation);
	free(sse_env.placement);
	memset(&sse_env, 0, sizeof(sse_env));
}

/* Not const: the core keeps its own state in .context. */
struct fi_provider sse_prov = {
	.name = SSE_PROV_NAME,
	.version = SSE_PROV_VERSION,
	.fi_version = SSE_FI_VERSION,
	.getinfo = sse_getinfo,
	.fabric = sse_fabric_open,
	.cleanup = sse_cleanup,
};

FI_EXT_INI
{
	sse_init_env();
	ssemu_log_set_sink(sse_emu_log);
	return &sse_prov;
}
