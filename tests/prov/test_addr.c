/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Addressing as libfabric applications (fabtests) use it, across processes
 * (fork) on one shared-memory fabric: a server binds a service with
 * fi_getinfo(node, service, FI_SOURCE) and its fi_endpoint, a client's
 * fi_getinfo(node, service, 0) and fi_av_insert reach that endpoint, even
 * when the client gets there before the server has opened it; a service
 * bound by a live endpoint cannot be bound again; it is free again when
 * its endpoint closes and when its process is SIGKILLed; nodes that are
 * not this host are refused.
 */
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sse_test.h"

#define TMO SSE_TEST_TIMEOUT_MS
#define MSG_LEN 4000
#define TAG 0x77

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* fi_getinfo as a server (FI_SOURCE) or a client names @service. */
static struct fi_info *getinfo_svc(const char *node, const char *service,
				   uint64_t flags)
{
	struct fi_info *hints = sse_test_hints(FI_TAGGED), *info;

	assert_fi_ok(fi_getinfo(FI_VERSION(1, 17), node, service, flags,
				hints, &info));
	fi_freeinfo(hints);
	return info;
}

/* Resources whose one endpoint binds @service (as fabtests' server). */
static void open_server(struct sse_res *r, const char *service)
{
	struct fi_info *info = getinfo_svc(NULL, service, FI_SOURCE);
	struct sse_res_opts o = { .hints = info };

	sse_res_open(r, 1, &o);
	fi_freeinfo(info);
}

/* The child: after @delay_ms, serve @service, tell the parent its
 * address, receive one message and check it; then wait to be told to go
 * (or killed).  Exits 0 when all went well. */
static void server_child(const char *service, int delay_ms, int wfd,
			 int rfd, bool recv_one)
{
	struct fi_cq_tagged_entry e;
	struct fi_sse_addr me;
	struct sse_res r;
	size_t len = sizeof(me);
	char *buf = calloc(1, MSG_LEN);
	char c;

	usleep((useconds_t)delay_ms * 1000);
	open_server(&r, service);
	assert_fi_ok(fi_getname(&r.ep[0]->fid, &me, &len));
	if (recv_one)
		assert_fi_ok(fi_trecv(r.ep[0], buf, MSG_LEN, NULL,
				      FI_ADDR_UNSPEC, TAG, 0, buf));
	assert_int_equal(write(wfd, &me, sizeof(me)), (ssize_t)sizeof(me));
	if (recv_one) {
		assert_int_equal(sse_cq_wait(&r, r.cq[0], &e, NULL, TMO), 1);
		assert_int_equal(e.len, MSG_LEN);
		assert_int_equal(sse_check(buf, MSG_LEN, 5), -1);
	}
	/* until the parent says go: it checks the binding meanwhile */
	if (read(rfd, &c, 1) != 1)
		_exit(3);
	sse_res_close(&r);
	free(buf);
	_exit(0);
}

struct child {
	pid_t pid;
	int to_c, from_c;
};

static void start_child(struct child *ch, const char *service, int delay_ms,
			bool recv_one)
{
	int to_c[2], to_p[2];

	assert_int_equal(pipe(to_c), 0);
	assert_int_equal(pipe(to_p), 0);
	ch->pid = fork();
	assert_true(ch->pid >= 0);
	if (ch->pid == 0) {
		close(to_c[1]);
		close(to_p[0]);
		server_child(service, delay_ms, to_p[1], to_c[0], recv_one);
	}
	close(to_c[0]);
	close(to_p[1]);
	ch->to_c = to_c[1];
	ch->from_c = to_p[0];
}

static void child_address(struct child *ch, struct fi_sse_addr *a)
{
	assert_int_equal(read(ch->from_c, a, sizeof(*a)), (ssize_t)sizeof(*a));
}

static void finish_child(struct child *ch)
{
	int status;

	assert_int_equal(write(ch->to_c, "g", 1), 1);
	assert_int_equal(waitpid(ch->pid, &status, 0), ch->pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	close(ch->to_c);
	close(ch->from_c);
}

/* The client's fi_av_insert of the getinfo dest_addr, then a lookup. */
static int insert_dest(struct sse_res *r, const struct fi_info *info,
		       fi_addr_t *fa, struct fi_sse_addr *out)
{
	size_t len = sizeof(*out);
	int ret;

	ret = fi_av_insert(r->av, info->dest_addr, 1, fa, 0, NULL);
	if (ret == 1)
		assert_fi_ok(fi_av_lookup(r->av, *fa, out, &len));
	return ret;
}

/* `slingshot-emu status --json` of this test's fabric lists service
 * @name bound by process @pid (when the tool is there to ask). */
static void check_status_lists(const char *name, pid_t pid)
{
	const char *top = getenv("TOP_BUILDDIR");
	char cmd[512], out[8192], want[128];
	size_t n;
	FILE *p;

	if (!top)
		top = ".";
	snprintf(cmd, sizeof(cmd), "%s/util/slingshot-emu", top);
	if (access(cmd, X_OK))
		return;
	snprintf(cmd, sizeof(cmd), "%s/util/slingshot-emu status --json "
		 "--fabric %s", top, getenv("FI_SLINGSHOT_EMU_FABRIC"));
	p = popen(cmd, "r");
	assert_non_null(p);
	n = fread(out, 1, sizeof(out) - 1, p);
	out[n] = '\0';
	assert_int_equal(pclose(p), 0);
	snprintf(want, sizeof(want), "{\"name\":\"%s\",", name);
	assert_non_null(strstr(out, want));
	snprintf(want, sizeof(want), "\"pid\":%d}", (int)pid);
	assert_non_null(strstr(strstr(out, "\"services\""), want));
}

/* Send the child the message it checks, let it finish, and close. */
static void send_to_child(struct sse_res *c, fi_addr_t fa, struct child *ch,
			  struct fi_info *cinfo)
{
	char *buf = malloc(MSG_LEN);

	assert_non_null(buf);
	sse_fill(buf, MSG_LEN, 5);
	assert_fi_ok(fi_tsend(c->ep[0], buf, MSG_LEN, NULL, fa, TAG, buf));
	sse_cq_expect(c, c->cq[0], buf, FI_TAGGED | FI_SEND);
	finish_child(ch);
	fi_freeinfo(cinfo);
	sse_res_close(c);
	free(buf);
}

/* The server binds in one process, the client resolves it from another
 * and sends it a message that arrives intact. */
static void test_addr_bind_resolve(void **state)
{
	struct fi_info *cinfo;
	struct fi_sse_addr srv, got;
	struct child ch;
	struct sse_res c;
	fi_addr_t fa;

	start_child(&ch, "9228", 0, true);
	child_address(&ch, &srv);
	check_status_lists("9228", ch.pid);
	sse_res_open(&c, 1, NULL);
	cinfo = getinfo_svc("127.0.0.1", "9228", 0);
	assert_int_equal(insert_dest(&c, cinfo, &fa, &got), 1);
	assert_memory_equal(&got, &srv, sizeof(got));
	send_to_child(&c, fa, &ch, cinfo);
}

/* fabtests start the client right after the server: the client's
 * fi_getinfo and fi_av_insert come before the server's fi_endpoint, and
 * fi_av_insert waits for the binding. */
static void test_addr_client_first(void **state)
{
	struct fi_info *cinfo;
	struct fi_sse_addr srv, got;
	struct child ch;
	struct sse_res c;
	fi_addr_t fa;
	uint64_t t0;

	/* (fork first: a child must not inherit an open fabric) */
	start_child(&ch, "early", 400, true);
	t0 = now_ms();
	sse_res_open(&c, 1, NULL);
	cinfo = getinfo_svc("localhost", "early", 0);
	assert_int_equal(insert_dest(&c, cinfo, &fa, &got), 1);
	/* the child binds 400 ms after the fork at the earliest */
	assert_true(now_ms() - t0 >= 400);
	child_address(&ch, &srv);
	assert_memory_equal(&got, &srv, sizeof(got));
	send_to_child(&c, fa, &ch, cinfo);
}

/* Bound by a live endpoint of another process: -FI_EADDRINUSE; free
 * again once that endpoint closes. */
static void test_addr_rebind_after_close(void **state)
{
	struct fi_info *sinfo;
	struct fi_sse_addr srv, mine;
	struct child ch;
	struct sse_res s;
	struct fid_ep *ep;
	size_t len = sizeof(mine);

	start_child(&ch, "rebind", 0, false);
	child_address(&ch, &srv);
	sse_res_open(&s, 1, NULL);
	sinfo = getinfo_svc("localhost", "rebind", FI_SOURCE);
	assert_int_equal(fi_endpoint(s.domain, sinfo, &ep, NULL),
			 -FI_EADDRINUSE);
	finish_child(&ch);
	assert_fi_ok(fi_endpoint(s.domain, sinfo, &ep, NULL));
	assert_fi_ok(fi_getname(&ep->fid, &mine, &len));
	assert_int_not_equal(mine.addr, srv.addr);
	assert_fi_ok(fi_close(&ep->fid));
	fi_freeinfo(sinfo);
	sse_res_close(&s);
}

/* A SIGKILLed server's service is free at once for the next bind, and a
 * client no longer resolves it to the dead endpoint. */
static void test_addr_release_on_kill(void **state)
{
	struct fi_info *sinfo, *cinfo;
	struct fi_sse_addr srv, got;
	struct child ch;
	struct sse_res s, c;
	struct fid_ep *ep;
	fi_addr_t fa;
	int status;

	start_child(&ch, "killed", 0, false);
	child_address(&ch, &srv);
	sse_res_open(&c, 1, NULL);
	cinfo = getinfo_svc("localhost", "killed", 0);
	assert_int_equal(insert_dest(&c, cinfo, &fa, &got), 1);
	assert_memory_equal(&got, &srv, sizeof(got));

	assert_int_equal(kill(ch.pid, SIGKILL), 0);
	assert_int_equal(waitpid(ch.pid, &status, 0), ch.pid);
	assert_true(WIFSIGNALED(status));
	close(ch.to_c);
	close(ch.from_c);
	/* nobody serves it now: the client's insert fails after the wait
	 * (FI_SLINGSHOT_EMU_SERVICE_WAIT, 2 s here) */
	assert_int_equal(insert_dest(&c, cinfo, &fa, &got), 0);
	assert_int_equal(fa, FI_ADDR_NOTAVAIL);

	sse_res_open(&s, 1, NULL);
	sinfo = getinfo_svc(NULL, "killed", FI_SOURCE);
	assert_fi_ok(fi_endpoint(s.domain, sinfo, &ep, NULL));
	assert_int_equal(insert_dest(&c, cinfo, &fa, &got), 1);
	assert_int_not_equal(got.addr, srv.addr);
	assert_fi_ok(fi_close(&ep->fid));
	fi_freeinfo(sinfo);
	fi_freeinfo(cinfo);
	sse_res_close(&s);
	sse_res_close(&c);
}

static void test_addr_not_this_host(void **state)
{
	struct fi_info *hints = sse_test_hints(FI_TAGGED), *info = NULL;

	assert_int_equal(fi_getinfo(FI_VERSION(1, 17), "203.0.113.7", "9228", 0,
				    hints, &info), -FI_ENODATA);
	assert_null(info);
	assert_int_equal(fi_getinfo(FI_VERSION(1, 17), "not-a-host.invalid",
				    "9228", FI_SOURCE, hints, &info),
			 -FI_ENODATA);
	assert_null(info);
	fi_freeinfo(hints);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_addr_bind_resolve),
		cmocka_unit_test(test_addr_client_first),
		cmocka_unit_test(test_addr_rebind_after_close),
		cmocka_unit_test(test_addr_release_on_kill),
		cmocka_unit_test(test_addr_not_this_host),
	};

	/* A failed assertion in a child ends it with a non-zero status,
	 * which the parent checks. */
	sse_test_init("shm", "addr");
	setenv("FI_SLINGSHOT_EMU_SERVICE_WAIT", "2000", 1);
	return cmocka_run_group_tests_name("addressing (shm store)", tests,
					   NULL, NULL);
}
