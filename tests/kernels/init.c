/*
 * The guest's /init for scripts/kernels.sh: a Debian kernel booted under qemu with this
 * machine's root, read-only over 9p. Debian builds 9p and virtio as modules, so this loads
 * them (the initramfs's /modules/order names them, one per line, in dependency order; each is
 * already decompressed), mounts the host root and the kernel's own file systems, chroots and
 * runs the script the kernel command line names (mt_script=PATH, handed to init as an
 * environment variable), then powers off. Every outcome, including the script's exit status,
 * is printed on the console (kernels.sh reads it: "mt-init: exit N").
 *
 * Static and standalone (no library but libc): it runs before any file system is mounted.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static void say(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("mt-init: ", stdout);
	vprintf(fmt, ap);
	fputc('\n', stdout);
	fflush(stdout);
	va_end(ap);
}

/* Never returns: init exiting would panic the kernel instead of ending the run. */
static void power_off(void)
{
	sync();
	reboot(RB_POWER_OFF);
	for (;;)
		pause();
}

static void fail(const char *what, const char *object)
{
	say("error: %s %s: %s", what, object, strerror(errno));
	say("exit 125");
	power_off();
}

static void load_modules(void)
{
	FILE *order = fopen("/modules/order", "r");
	if (!order)
		fail("open", "/modules/order");
	char name[256];
	while (fgets(name, sizeof(name), order)) {
		name[strcspn(name, "\n")] = 0;
		if (!name[0])
			continue;
		char path[300];
		snprintf(path, sizeof(path), "/modules/%s", name);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			fail("open", path);
		/* EEXIST: built into this kernel, or loaded already as a dependency. */
		if (syscall(SYS_finit_module, fd, "", 0) != 0 && errno != EEXIST)
			fail("finit_module", path);
		close(fd);
	}
	fclose(order);
}

static void mount_or_fail(const char *src, const char *dst, const char *type, unsigned long flags, const char *data)
{
	mkdir(dst, 0755);
	if (mount(src, dst, type, flags, data) != 0)
		fail("mount", dst);
}

int main(void)
{
	const char *script = getenv("mt_script");
	if (!script)
		fail("find", "mt_script= on the kernel command line");
	load_modules();
	mount_or_fail("root", "/host", "9p", MS_RDONLY, "trans=virtio,version=9p2000.L,msize=512000,cache=loose");
	/* The host root is read-only: the guest's own file systems go over its folders. */
	mount_or_fail("proc", "/host/proc", "proc", 0, NULL);
	mount_or_fail("sysfs", "/host/sys", "sysfs", 0, NULL);
	mount_or_fail("devtmpfs", "/host/dev", "devtmpfs", 0, NULL);
	mount_or_fail("tmpfs", "/host/tmp", "tmpfs", 0, "mode=1777");
	mount_or_fail("tmpfs", "/host/run", "tmpfs", 0, "mode=755");
	mount_or_fail("tmpfs", "/host/root", "tmpfs", 0, "mode=700");
	mount_or_fail("tracefs", "/host/sys/kernel/tracing", "tracefs", 0, NULL);
	mount_or_fail("debugfs", "/host/sys/kernel/debug", "debugfs", 0, NULL);
	mount_or_fail("bpf", "/host/sys/fs/bpf", "bpf", 0, NULL);
	if (chroot("/host") != 0 || chdir("/") != 0)
		fail("chroot", "/host");

	pid_t pid = fork();
	if (pid < 0)
		fail("fork", script);
	if (pid == 0) {
		setenv("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", 1);
		setenv("HOME", "/root", 1);
		execl("/bin/bash", "bash", script, (char *)NULL);
		say("error: exec /bin/bash %s: %s", script, strerror(errno));
		_exit(127);
	}
	/* PID 1 reaps orphans too; the script's own status is the one reported, and its end is
	 * the run's end (what it left running dies with the guest). */
	int status = 0;
	for (;;) {
		int st;
		pid_t got = wait(&st);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			fail("wait", script);
		if (got == pid) {
			status = st;
			break;
		}
	}
	say("exit %d", WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
	power_off();
}
