/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests of the service directory (emu/ssemu_svc.c): keys, bind and
 * lookup by name and by key, one live binding per key (-EADDRINUSE naming
 * the holder), release when the endpoint closes, when its NIC detaches and
 * when its process is SIGKILLed (shared store, fork), bad names, a full
 * directory, and the listing.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include <slingshot_emu/ssemu.h>

static struct ssemu_fabric *open_private(struct ssemu_config *cfg)
{
	struct ssemu_fabric_opts o = { .store = SSEMU_STORE_PRIVATE,
				       .config = cfg };
	struct ssemu_fabric *f;
	char err[256];

	assert_int_equal(ssemu_fabric_open(&o, &f, err, sizeof(err)), 0);
	return f;
}

static struct ssemu_nic *attach(struct ssemu_fabric *f)
{
	struct ssemu_nic *nic;

	assert_int_equal(ssemu_nic_attach(f, NULL, &nic), 0);
	return nic;
}

static struct ssemu_ep *ep_open(struct ssemu_nic *nic)
{
	struct ssemu_ep *ep;

	assert_int_equal(ssemu_ep_open(nic, &ep), 0);
	return ep;
}

static void test_svc_key(void **state)
{
	static const char *names[] = { "9228", "9229", "a", "b", "server",
				       "my-service-with-a-long-name" };
	uint32_t k[6];
	size_t i, j;

	for (i = 0; i < 6; i++) {
		k[i] = ssemu_svc_key(names[i]);
		assert_int_not_equal(k[i], 0);
		assert_int_not_equal(k[i], SSEMU_SVC_KEY_MASK);
		assert_int_equal(k[i] & ~SSEMU_SVC_KEY_MASK, 0);
		assert_int_equal(k[i], ssemu_svc_key(names[i]));
		for (j = 0; j < i; j++)
			assert_int_not_equal(k[i], k[j]);
	}
}

static void test_svc_bind_lookup(void **state)
{
	struct ssemu_fabric *f = open_private(NULL);
	struct ssemu_nic *n1 = attach(f), *n2 = attach(f);
	struct ssemu_ep *a = ep_open(n1), *b = ep_open(n2), *c = ep_open(n1);
	struct ssemu_svc_info si, holder;
	char longname[SSEMU_SVC_NAME_MAX + 1];

	assert_int_equal(ssemu_svc_lookup(f, "9228", 0, &si), -ENOENT);
	assert_int_equal(ssemu_svc_bind(a, "9228", NULL), 0);
	assert_int_equal(ssemu_svc_bind(b, "other", NULL), 0);

	memset(&si, 0, sizeof(si));
	assert_int_equal(ssemu_svc_lookup(f, "9228", 0, &si), 0);
	assert_string_equal(si.name, "9228");
	assert_int_equal(si.addr, ssemu_ep_addr(a));
	assert_int_equal(si.key, ssemu_svc_key("9228"));
	assert_int_equal(si.pid, getpid());
	memset(&si, 0, sizeof(si));
	assert_int_equal(ssemu_svc_lookup(f, NULL, ssemu_svc_key("other"),
					  &si), 0);
	assert_int_equal(si.addr, ssemu_ep_addr(b));
	assert_string_equal(si.name, "other");

	/* one endpoint per service, this process's or another's */
	memset(&holder, 0, sizeof(holder));
	assert_int_equal(ssemu_svc_bind(c, "9228", &holder), -EADDRINUSE);
	assert_int_equal(holder.addr, ssemu_ep_addr(a));
	assert_string_equal(holder.name, "9228");
	assert_int_equal(ssemu_svc_bind(a, "9228", NULL), -EADDRINUSE);
	/* an endpoint may hold several services */
	assert_int_equal(ssemu_svc_bind(a, "second", NULL), 0);
	assert_int_equal(ssemu_fabric_services(f, NULL, 0), 3);

	/* bad names */
	assert_int_equal(ssemu_svc_bind(c, "", NULL), -EINVAL);
	assert_int_equal(ssemu_svc_bind(c, NULL, NULL), -EINVAL);
	memset(longname, 'x', SSEMU_SVC_NAME_MAX);
	longname[SSEMU_SVC_NAME_MAX] = '\0';
	assert_int_equal(ssemu_svc_bind(c, longname, NULL), -ENAMETOOLONG);
	longname[SSEMU_SVC_NAME_MAX - 1] = '\0';
	assert_int_equal(ssemu_svc_bind(c, longname, NULL), 0);
	assert_int_equal(ssemu_svc_lookup(f, longname, 0, &si), 0);
	assert_int_equal(si.addr, ssemu_ep_addr(c));

	/* unbind releases all of an endpoint's services */
	assert_int_equal(ssemu_svc_unbind(a), 2);
	assert_int_equal(ssemu_svc_lookup(f, "9228", 0, &si), -ENOENT);
	assert_int_equal(ssemu_svc_lookup(f, "second", 0, &si), -ENOENT);
	assert_int_equal(ssemu_svc_bind(c, "9228", NULL), 0);

	/* closing the endpoint releases them too, and the next endpoint
	 * opened on the same pid does not inherit them */
	ssemu_ep_close(c);
	assert_int_equal(ssemu_svc_lookup(f, "9228", 0, &si), -ENOENT);
	c = ep_open(n1);
	assert_int_equal(ssemu_svc_lookup(f, longname, 0, &si), -ENOENT);
	assert_int_equal(ssemu_svc_bind(a, "9228", NULL), 0);

	/* detaching the NIC releases its endpoints' services */
	assert_int_equal(ssemu_fabric_services(f, NULL, 0), 2);
	ssemu_ep_close(b);
	ssemu_nic_detach(n2);
	assert_int_equal(ssemu_svc_lookup(f, "other", 0, &si), -ENOENT);
	assert_int_equal(ssemu_fabric_services(f, &si, 1), 1);
	assert_string_equal(si.name, "9228");

	ssemu_ep_close(a);
	ssemu_ep_close(c);
	ssemu_nic_detach(n1);
	assert_int_equal(ssemu_fabric_services(f, NULL, 0), 0);
	ssemu_fabric_close(f);
}

/* A NIC detached without closing its endpoints (what the reaper does for
 * a dead process) releases their services. */
static void test_svc_nic_detach(void **state)
{
	struct ssemu_fabric *f = open_private(NULL);
	struct ssemu_nic *n1 = attach(f), *n2;
	struct ssemu_ep *a = ep_open(n1), *b;
	struct ssemu_svc_info si;

	assert_int_equal(ssemu_svc_bind(a, "gone", NULL), 0);
	ssemu_nic_detach(n1);
	assert_int_equal(ssemu_svc_lookup(f, "gone", 0, &si), -ENOENT);
	n2 = attach(f);
	b = ep_open(n2);
	assert_int_equal(ssemu_svc_bind(b, "gone", NULL), 0);
	assert_int_equal(ssemu_svc_lookup(f, "gone", 0, &si), 0);
	assert_int_equal(si.addr, ssemu_ep_addr(b));
	free(a);	/* the handle outlived its NIC: only memory is left */
	ssemu_ep_close(b);
	ssemu_nic_detach(n2);
	ssemu_fabric_close(f);
}

static void test_svc_full(void **state)
{
	struct ssemu_config cfg;
	struct ssemu_fabric *f;
	struct ssemu_nic *nic[16];
	struct ssemu_ep **ep;
	struct ssemu_svc_info si;
	uint32_t per, i, n;
	char name[32];

	assert_int_equal(ssemu_config_preset("switch", &cfg), 0);
	n = (uint32_t)ssemu_config_nports(&cfg);
	assert_true(n >= 8 && n <= 16);
	per = (SSEMU_MAX_SVCS + n) / n;
	cfg.eps_per_nic = per;
	cfg.max_eps = 0;	/* an endpoint slot for every pid of every NIC */
	f = open_private(&cfg);
	ep = calloc((size_t)n * per, sizeof(*ep));
	assert_non_null(ep);
	for (i = 0; i < n; i++)
		nic[i] = attach(f);
	for (i = 0; i < n * per; i++)
		ep[i] = ep_open(nic[i / per]);
	for (i = 0; i < SSEMU_MAX_SVCS; i++) {
		snprintf(name, sizeof(name), "svc-%u", i);
		assert_int_equal(ssemu_svc_bind(ep[i], name, NULL), 0);
	}
	assert_int_equal(ssemu_svc_bind(ep[SSEMU_MAX_SVCS], "one-more", NULL),
			 -ENOSPC);
	assert_int_equal(ssemu_fabric_services(f, &si, 1), SSEMU_MAX_SVCS);
	/* a closed endpoint's entry is the next one's */
	ssemu_ep_close(ep[7]);
	ep[7] = NULL;
	assert_int_equal(ssemu_svc_bind(ep[SSEMU_MAX_SVCS], "one-more", NULL),
			 0);
	for (i = 0; i < n * per; i++)
		ssemu_ep_close(ep[i]);
	for (i = 0; i < n; i++)
		ssemu_nic_detach(nic[i]);
	free(ep);
	ssemu_fabric_close(f);
}

/* A shared fabric: the child binds, the parent sees it and cannot bind
 * it; once the child is SIGKILLed the service is free at once (the pid
 * check), without waiting for the reaper. */
static void test_svc_dead_process(void **state)
{
	char name[64], path[80];
	struct ssemu_fabric_opts o = { .store = SSEMU_STORE_SHM };
	struct ssemu_svc_info si, holder;
	struct ssemu_fabric *f;
	struct ssemu_nic *nic;
	struct ssemu_ep *ep;
	struct stat st;
	int pfd[2], status;
	pid_t pid;
	char c;

	snprintf(name, sizeof(name), "ssemu-svc-test-%d", (int)getpid());
	o.name = name;
	assert_int_equal(pipe(pfd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (ssemu_fabric_open(&o, &f, NULL, 0) ||
		    ssemu_nic_attach(f, NULL, &nic) ||
		    ssemu_ep_open(nic, &ep) ||
		    ssemu_svc_bind(ep, "child", NULL))
			_exit(2);
		if (write(pfd[1], "r", 1) != 1)
			_exit(3);
		for (;;)
			pause();
	}
	close(pfd[1]);
	assert_int_equal(read(pfd[0], &c, 1), 1);
	close(pfd[0]);
	assert_int_equal(ssemu_fabric_open(&o, &f, NULL, 0), 0);
	nic = attach(f);
	ep = ep_open(nic);
	assert_int_equal(ssemu_svc_lookup(f, "child", 0, &si), 0);
	assert_int_equal(si.pid, pid);
	assert_int_equal(ssemu_svc_bind(ep, "child", &holder), -EADDRINUSE);
	assert_int_equal(holder.pid, pid);

	assert_int_equal(kill(pid, SIGKILL), 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(ssemu_svc_lookup(f, "child", 0, &si), -ENOENT);
	assert_int_equal(ssemu_svc_bind(ep, "child", NULL), 0);
	assert_int_equal(ssemu_svc_lookup(f, "child", 0, &si), 0);
	assert_int_equal(si.pid, getpid());
	assert_int_equal(si.addr, ssemu_ep_addr(ep));

	ssemu_ep_close(ep);
	ssemu_nic_detach(nic);
	ssemu_fabric_close(f);
	snprintf(path, sizeof(path), "/dev/shm/%s", name);
	assert_int_not_equal(stat(path, &st), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_svc_key),
		cmocka_unit_test(test_svc_bind_lookup),
		cmocka_unit_test(test_svc_nic_detach),
		cmocka_unit_test(test_svc_full),
		cmocka_unit_test(test_svc_dead_process),
	};

	return cmocka_run_group_tests_name("service directory", tests, NULL,
					   NULL);
}
