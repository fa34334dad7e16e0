/* metrics-process.c — the standard process_* metrics every Prometheus
 * client library exports (process_cpu_seconds_total, process_resident_
 * memory_bytes, process_virtual_memory_bytes, process_open_fds,
 * process_max_fds, process_start_time_seconds), read from Linux's /proc at
 * each scrape, so dashboards built for any exporter work on mailtier's.
 *
 * Trust boundary: /proc/self is the kernel's. proc(5) for the fields. */
#include "metrics.h"

#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

struct process_metrics {
	struct mt_series *cpu, *rss, *vsize, *open_fds, *max_fds, *start_time;
};

static struct process_metrics process;

/* /proc/stat's btime: the boot time in seconds since the epoch. */
static double boot_time(void)
{
	FILE *fp = fopen("/proc/stat", "r");
	if (fp == NULL)
		return 0;
	char line[256];
	double btime = 0;
	while (fgets(line, sizeof(line), fp) != NULL)
		if (sscanf(line, "btime %lf", &btime) == 1)
			break;
	fclose(fp);
	return btime;
}

static unsigned int count_open_fds(void)
{
	DIR *dir = opendir("/proc/self/fd");
	if (dir == NULL)
		return 0;
	unsigned int n = 0;
	for (struct dirent *de; (de = readdir(dir)) != NULL; )
		if (de->d_name[0] != '.')
			n++;
	closedir(dir);
	return n > 0 ? n - 1 : 0;	/* not the directory's own fd */
}

/* Fields 14-15 (utime, stime), 22 (starttime), 23 (vsize), 24 (rss) of
 * /proc/self/stat, counted after the ")" that ends the command name. */
static void read_stat(void)
{
	FILE *fp = fopen("/proc/self/stat", "r");
	if (fp == NULL)
		return;
	char buf[1024];
	size_t n = fread(buf, 1, sizeof(buf) - 1, fp);
	fclose(fp);
	buf[n] = '\0';
	const char *p = strrchr(buf, ')');
	if (p == NULL)
		return;
	unsigned long long utime, stime, starttime, vsize;
	long long rss;
	/* After ")": state(3) ppid pgrp session tty tpgid flags minflt
	 * cminflt majflt cmajflt utime(14) stime cutime cstime priority
	 * nice threads itrealvalue starttime(22) vsize rss. */
	if (sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu"
		   " %*d %*d %*d %*d %*d %*d %llu %llu %lld",
		   &utime, &stime, &starttime, &vsize, &rss) != 5)
		return;
	double ticks = (double)sysconf(_SC_CLK_TCK);
	long page = sysconf(_SC_PAGESIZE);
	mt_series_store_float(process.cpu, (double)(utime + stime) / ticks);
	mt_series_set(process.vsize, (double)vsize);
	mt_series_set(process.rss, (double)rss * (double)page);
	mt_series_set(process.start_time, boot_time() + (double)starttime / ticks);
}

static void collect_process(void *context)
{
	(void)context;
	read_stat();
	mt_series_set(process.open_fds, count_open_fds());
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
		mt_series_set(process.max_fds, rl.rlim_cur == RLIM_INFINITY ? -1 :
			      (double)rl.rlim_cur);
}

void mt_metrics_add_process(struct mt_metrics *m)
{
	process.cpu = mt_metrics_counter_series(m, "process_cpu_seconds_total",
		"Total user and system CPU time spent in seconds.");
	process.rss = mt_metrics_gauge_series(m, "process_resident_memory_bytes",
		"Resident memory size in bytes.");
	process.vsize = mt_metrics_gauge_series(m, "process_virtual_memory_bytes",
		"Virtual memory size in bytes.");
	process.open_fds = mt_metrics_gauge_series(m, "process_open_fds",
		"Number of open file descriptors.");
	process.max_fds = mt_metrics_gauge_series(m, "process_max_fds",
		"Maximum number of open file descriptors.");
	process.start_time = mt_metrics_gauge_series(m, "process_start_time_seconds",
		"Start time of the process since unix epoch in seconds.");
	mt_metrics_add_collector(m, collect_process, NULL);
}
