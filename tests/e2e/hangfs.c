// A FUSE file system for tests/e2e/agent_hang_test.sh: a hung mount under a
// target's executable (issue 38, finding 7). It serves one read-only file,
// "exe", a copy of SOURCE held in memory. While the file HANG_FLAG exists,
// every open and read of it is taken from the kernel and not answered, as a
// hung NFS or FUSE server would do: the reader sleeps in the kernel, and
// once killed it waits uninterruptibly (state D) until the answer comes, the
// flag is removed, or the daemon ends. getattr always answers, so that stat
// (discovery's) does not hang.
//
//   cc hangfs.c $(pkg-config --cflags --libs fuse3) -o hangfs
//   hangfs SOURCE HANG_FLAG MOUNTPOINT -f -o allow_other
#define FUSE_USE_VERSION 31

#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char* data;
static size_t size;
static const char* hang_flag;

// Holds the request while the flag is there.
static void HangWhileFlagged(void) {
  while (access(hang_flag, F_OK) == 0) usleep(100 * 1000);
}

static int GetAttr(const char* path, struct stat* st, struct fuse_file_info* fi) {
  (void)fi;
  memset(st, 0, sizeof(*st));
  if (strcmp(path, "/") == 0) {
    st->st_mode = S_IFDIR | 0755;
    st->st_nlink = 2;
    return 0;
  }
  if (strcmp(path, "/exe") != 0) return -ENOENT;
  st->st_mode = S_IFREG | 0755;
  st->st_nlink = 1;
  st->st_size = (off_t)size;
  return 0;
}

static int ReadDir(const char* path, void* buf, fuse_fill_dir_t fill, off_t offset,
                   struct fuse_file_info* fi, enum fuse_readdir_flags flags) {
  (void)offset;
  (void)fi;
  (void)flags;
  if (strcmp(path, "/") != 0) return -ENOENT;
  fill(buf, ".", NULL, 0, 0);
  fill(buf, "..", NULL, 0, 0);
  fill(buf, "exe", NULL, 0, 0);
  return 0;
}

static int Open(const char* path, struct fuse_file_info* fi) {
  if (strcmp(path, "/exe") != 0) return -ENOENT;
  if ((fi->flags & O_ACCMODE) != O_RDONLY) return -EACCES;
  HangWhileFlagged();
  return 0;
}

static int Read(const char* path, char* buf, size_t n, off_t offset, struct fuse_file_info* fi) {
  (void)path;
  (void)fi;
  HangWhileFlagged();
  if (offset < 0 || (size_t)offset >= size) return 0;
  if (n > size - (size_t)offset) n = size - (size_t)offset;
  memcpy(buf, data + offset, n);
  return (int)n;
}

static const struct fuse_operations kOps = {
    .getattr = GetAttr,
    .open = Open,
    .read = Read,
    .readdir = ReadDir,
};

int main(int argc, char* argv[]) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s SOURCE HANG_FLAG MOUNTPOINT [fuse options]\n", argv[0]);
    return 2;
  }
  FILE* f = fopen(argv[1], "rb");
  if (!f) {
    perror(argv[1]);
    return 1;
  }
  fseek(f, 0, SEEK_END);
  size = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  data = malloc(size ? size : 1);
  if (!data || fread(data, 1, size, f) != size) {
    fprintf(stderr, "cannot read %s\n", argv[1]);
    return 1;
  }
  fclose(f);
  hang_flag = argv[2];
  // fuse_main sees: program, MOUNTPOINT, the options.
  argv[2] = argv[0];
  return fuse_main(argc - 2, argv + 2, &kOps, NULL);
}
