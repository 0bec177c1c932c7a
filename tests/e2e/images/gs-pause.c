/* gs-pause.c - the pod sandbox's pause process in the e2e tests' image gpusched.local/pause
 * (built into an image by scripts/image.py, entrypoint /pause). It holds the pod's namespaces
 * and does nothing else: it reaps every child re-parented to it (it is PID 1 of the sandbox)
 * and exits 0 on SIGTERM or SIGINT, as the upstream pause does. Linked static: the image holds
 * this file, /etc/passwd and /etc/group only. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>

static volatile sig_atomic_t stop;

static void on_stop(int sig)
{
    stop = 1;
}

/* SIGCHLD only wakes sigsuspend; the main loop reaps. */
static void on_child(int sig)
{
}

/* waitpid every exited child, never blocking. */
static void reap(void)
{
    for (;;) {
        pid_t pid = waitpid(-1, NULL, WNOHANG);
        if (pid > 0 || (pid < 0 && errno == EINTR))
            continue;
        return;
    }
}

int main(int argc, char **argv)
{
    /* PID 1 ignores signals it has no handler for: install them before anything else, with the
     * three signals blocked except inside sigsuspend, so none is lost between a check and the
     * wait. */
    sigset_t block, wait_mask;
    sigemptyset(&block);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGCHLD);
    if (sigprocmask(SIG_BLOCK, &block, &wait_mask) != 0) {
        perror("pause: sigprocmask");
        return 1;
    }
    sigdelset(&wait_mask, SIGTERM);
    sigdelset(&wait_mask, SIGINT);
    sigdelset(&wait_mask, SIGCHLD);

    struct sigaction sa = {.sa_handler = on_stop};
    sigemptyset(&sa.sa_mask);
    struct sigaction sc = {.sa_handler = on_child, .sa_flags = SA_NOCLDSTOP};
    sigemptyset(&sc.sa_mask);
    if (sigaction(SIGTERM, &sa, NULL) != 0 || sigaction(SIGINT, &sa, NULL) != 0 ||
        sigaction(SIGCHLD, &sc, NULL) != 0) {
        perror("pause: sigaction");
        return 1;
    }
    while (!stop) {
        reap();
        if (stop)
            break;
        sigsuspend(&wait_mask);
    }
    reap();
    return 0;
}
