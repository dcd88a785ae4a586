// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#include "map_guard.h"

static volatile sig_atomic_t replaced;
static uintptr_t page_mask;

/*
 * BUS_ADRERR is the kernel's code for a mapped file's page that no longer
 * exists; hardware errors (BUS_MCEERR_*) and the rest are not ours to hide.
 * The access that faulted runs again once this returns, and reads the zeros.
 */
static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	struct sigaction dfl;

	(void)uc;
	if (si->si_code == BUS_ADRERR && si->si_addr) {
		void *page = (void *)((uintptr_t)si->si_addr & page_mask);

		if (mmap(page, ~page_mask + 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) !=
		    MAP_FAILED) {
			replaced++;
			return;
		}
	}
	/* The default again: the fault repeats and ends the process as it would have. */
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigaction(sig, &dfl, NULL);
}

int map_guard__install(void)
{
	struct sigaction sa;
	long psz = sysconf(_SC_PAGESIZE);

	if (psz <= 0)
		return -EINVAL;
	page_mask = ~((uintptr_t)psz - 1);
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigbus;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	return sigaction(SIGBUS, &sa, NULL) ? -errno : 0;
}

unsigned long map_guard__pages(void)
{
	return replaced;
}
