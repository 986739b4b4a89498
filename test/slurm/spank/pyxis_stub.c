/*
 * pyxis_stub: a test-only SPANK plugin that stands in for pyxis.
 *
 * It registers pyxis's srun options, so `srun --help` lists them and srun
 * accepts them, and on the node (in each task, just before exec) writes
 * what it received to RECORD_DIR/<jobid>.<stepid>.<taskid>.rec as
 * "key=value" lines: the options, job and step ids, the task's working
 * directory and argv. Tests assert on those files.
 *
 * Like pyxis with container_scope=global it keeps named containers as
 * directories $ENROOT_DATA_PATH/pyxis_NAME (when the job's environment
 * sets ENROOT_DATA_PATH): --container-name=NAME:create fails when one
 * exists, a name without --container-image fails when none exists, and an
 * image creates one; a failure ends the task with exit code 1, as pyxis
 * fails the step. It runs nothing in a container: the task runs on the
 * node as usual, in srun's working directory.
 *
 * plugstack.conf: optional /path/pyxis_stub.so record_dir=/path/records
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <slurm/spank.h>

SPANK_PLUGIN(pyxis_stub, 1);

enum {
	O_IMAGE, O_MOUNTS, O_WORKDIR, O_NAME, O_SAVE, O_MOUNT_HOME, O_NO_MOUNT_HOME,
	O_REMAP_ROOT, O_NO_REMAP_ROOT, O_ENTRYPOINT, O_NO_ENTRYPOINT,
	O_ENTRYPOINT_LOG, O_WRITABLE, O_READONLY, O_ENV, O_COUNT
};

static const char *opt_names[O_COUNT] = {
	"container-image", "container-mounts", "container-workdir",
	"container-name", "container-save", "container-mount-home",
	"no-container-mount-home", "container-remap-root",
	"no-container-remap-root", "container-entrypoint",
	"no-container-entrypoint", "container-entrypoint-log",
	"container-writable", "container-readonly", "container-env",
};

static char *opt_values[O_COUNT];
static char record_dir[PATH_MAX];

static int opt_cb(int val, const char *optarg, int remote)
{
	(void)remote;
	if (val < 0 || val >= O_COUNT)
		return -1;
	free(opt_values[val]);
	/* A flag arrives as NULL in srun and as "" in slurmstepd. */
	opt_values[val] = strdup(optarg && *optarg ? optarg : "1");
	return opt_values[val] ? 0 : -1;
}

struct spank_option spank_options[] = {
	{ "container-image", "[USER@][REGISTRY#]IMAGE[:TAG]|PATH", "[pyxis stub] the image to use for the container", 1, O_IMAGE, opt_cb },
	{ "container-mounts", "SRC:DST[:FLAGS][,SRC:DST...]", "[pyxis stub] bind mount[s] inside the container", 1, O_MOUNTS, opt_cb },
	{ "container-workdir", "PATH", "[pyxis stub] working directory inside the container", 1, O_WORKDIR, opt_cb },
	{ "container-name", "NAME[:FLAG]", "[pyxis stub] name to use for saving and loading the container", 1, O_NAME, opt_cb },
	{ "container-save", "PATH", "[pyxis stub] save the container state to a squashfs file", 1, O_SAVE, opt_cb },
	{ "container-mount-home", NULL, "[pyxis stub] bind mount the user's home directory", 0, O_MOUNT_HOME, opt_cb },
	{ "no-container-mount-home", NULL, "[pyxis stub] do not bind mount the user's home directory", 0, O_NO_MOUNT_HOME, opt_cb },
	{ "container-remap-root", NULL, "[pyxis stub] ask to be remapped to root inside the container", 0, O_REMAP_ROOT, opt_cb },
	{ "no-container-remap-root", NULL, "[pyxis stub] do not remap to root inside the container", 0, O_NO_REMAP_ROOT, opt_cb },
	{ "container-entrypoint", NULL, "[pyxis stub] execute the entrypoint from the container image", 0, O_ENTRYPOINT, opt_cb },
	{ "no-container-entrypoint", NULL, "[pyxis stub] do not execute the entrypoint", 0, O_NO_ENTRYPOINT, opt_cb },
	{ "container-entrypoint-log", NULL, "[pyxis stub] print the output of the entrypoint script", 0, O_ENTRYPOINT_LOG, opt_cb },
	{ "container-writable", NULL, "[pyxis stub] make the container filesystem writable", 0, O_WRITABLE, opt_cb },
	{ "container-readonly", NULL, "[pyxis stub] make the container filesystem read-only", 0, O_READONLY, opt_cb },
	{ "container-env", "NAME[,NAME...]", "[pyxis stub] names of environment variables to override in the container", 1, O_ENV, opt_cb },
	SPANK_OPTIONS_TABLE_END
};

int slurm_spank_init(spank_t sp, int ac, char **av)
{
	(void)sp;
	for (int i = 0; i < ac; i++)
		if (strncmp(av[i], "record_dir=", 11) == 0)
			snprintf(record_dir, sizeof(record_dir), "%s", av[i] + 11);
	return 0;
}

/* put writes key=value with newlines and backslashes escaped. */
static void put(FILE *f, const char *key, const char *value)
{
	fprintf(f, "%s=", key);
	for (const char *p = value ? value : ""; *p; p++) {
		if (*p == '\n')
			fputs("\\n", f);
		else if (*p == '\\')
			fputs("\\\\", f);
		else
			fputc(*p, f);
	}
	fputc('\n', f);
}

/* container emulates pyxis's named-container store; it returns an error
 * message, or NULL when the task may run. */
static const char *container(spank_t sp, char *err, size_t errlen)
{
	char data[PATH_MAX], dir[PATH_MAX + 300], name[256], *flag;
	struct stat st;

	if (!opt_values[O_NAME] || spank_getenv(sp, "ENROOT_DATA_PATH", data, sizeof(data)) != ESPANK_SUCCESS)
		return NULL;
	snprintf(name, sizeof(name), "%s", opt_values[O_NAME]);
	flag = strchr(name, ':');
	if (flag)
		*flag++ = '\0';
	snprintf(dir, sizeof(dir), "%s/pyxis_%s", data, name);
	if (stat(dir, &st) == 0) {
		if (flag && strcmp(flag, "create") == 0) {
			snprintf(err, errlen, "pyxis: error: \"create\" flag was passed to --container-name but the container already exists");
			return err;
		}
		return NULL;
	}
	if (!opt_values[O_IMAGE]) {
		snprintf(err, errlen, "pyxis: error: a container with name \"pyxis_%s\" does not exist, and --container-image is not set", name);
		return err;
	}
	mkdir(data, 0700);
	if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
		snprintf(err, errlen, "pyxis: error: cannot create %.300s: %s", dir, strerror(errno));
		return err;
	}
	char file[PATH_MAX + 320];
	snprintf(file, sizeof(file), "%s/image", dir);
	FILE *f = fopen(file, "w");
	if (f) {
		fprintf(f, "%s\n", opt_values[O_IMAGE]);
		fclose(f);
	}
	return NULL;
}

int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	uint32_t job = 0, step = 0, task = 0;
	int argc = 0, any = 0;
	char **argv = NULL, cwd[PATH_MAX], path[PATH_MAX + 64], tmp[PATH_MAX + 80], buf[PATH_MAX], errbuf[512];
	const char *fail;
	FILE *f;

	(void)ac;
	(void)av;
	for (int i = 0; i < O_COUNT; i++)
		any |= opt_values[i] != NULL;
	if (!any || record_dir[0] == '\0')
		return 0;
	spank_get_item(sp, S_JOB_ID, &job);
	spank_get_item(sp, S_JOB_STEPID, &step);
	spank_get_item(sp, S_TASK_GLOBAL_ID, &task);
	spank_get_item(sp, S_JOB_ARGV, &argc, &argv);
	if (!getcwd(cwd, sizeof(cwd)))
		cwd[0] = '\0';
	fail = container(sp, errbuf, sizeof(errbuf));

	mkdir(record_dir, 01777);
	snprintf(path, sizeof(path), "%s/%u.%u.%u.rec", record_dir, job, step, task);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (f) {
		char num[32];
		snprintf(num, sizeof(num), "%u", job);
		put(f, "job", num);
		snprintf(num, sizeof(num), "%u", step);
		put(f, "step", num);
		snprintf(num, sizeof(num), "%u", task);
		put(f, "task", num);
		snprintf(num, sizeof(num), "%u", (unsigned)getuid());
		put(f, "uid", num);
		put(f, "cwd", cwd);
		for (int i = 0; i < argc; i++) {
			char key[32];
			snprintf(key, sizeof(key), "argv.%d", i);
			put(f, key, argv[i]);
		}
		for (int i = 0; i < O_COUNT; i++) {
			if (opt_values[i]) {
				char key[64];
				snprintf(key, sizeof(key), "opt.%s", opt_names[i]);
				put(f, key, opt_values[i]);
			}
		}
		if (spank_getenv(sp, "SLURM_PTY_PORT", buf, sizeof(buf)) == ESPANK_SUCCESS)
			put(f, "pty", "1");
		if (spank_getenv(sp, "SLURM_JOB_COMMENT", buf, sizeof(buf)) == ESPANK_SUCCESS)
			put(f, "comment", buf);
		if (opt_values[O_ENV]) {
			char names[1024], *save = NULL;
			snprintf(names, sizeof(names), "%s", opt_values[O_ENV]);
			for (char *n = strtok_r(names, ",", &save); n; n = strtok_r(NULL, ",", &save)) {
				char key[300];
				snprintf(key, sizeof(key), "env.%s", n);
				if (spank_getenv(sp, n, buf, sizeof(buf)) == ESPANK_SUCCESS)
					put(f, key, buf);
			}
		}
		put(f, "result", fail ? fail : "ok");
		fclose(f);
		rename(tmp, path);
	}
	if (fail) {
		/* pyxis fails the step before the task runs; exiting here gives
		 * srun the same non-zero exit code. */
		slurm_error("%s", fail);
		_exit(1);
	}
	if (opt_values[O_SAVE]) {
		int fd = open(opt_values[O_SAVE], O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd >= 0) {
			if (write(fd, "hsqs-stub\n", 10) < 0)
				slurm_error("pyxis stub: write %s: %m", opt_values[O_SAVE]);
			close(fd);
		}
	}
	return 0;
}
