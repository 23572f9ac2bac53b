// @ts-check
/**
 * Preloaded into every benchmark child (`node --import …/report-usage.mjs …`): when the process
 * exits, writes its CPU time and peak RSS as one JSON line to the file named by
 * TAO_BENCH_USAGE_FILE. CPU is user + system of the whole process tree: this process (every
 * thread: the encode workers, V8's helpers, libuv's pool) plus the children it waited for
 * (`cutime`/`cstime` of /proc/self/stat). Nothing else: it must not change what it measures.
 */
import fs from 'node:fs';

const file = process.env.TAO_BENCH_USAGE_FILE;
if (file) {
  process.on('exit', () => {
    const ru = process.resourceUsage();
    let childrenSeconds = 0;
    try {
      // fields after the command name (which may hold spaces): state is field 3, cutime 16, cstime 17
      const stat = fs.readFileSync('/proc/self/stat', 'utf8');
      const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      childrenSeconds = (Number(rest[13]) + Number(rest[14])) / 100; // USER_HZ is 100 on Linux
    } catch {
      // no /proc: this process only
    }
    const usage = {
      userSeconds: ru.userCPUTime / 1e6,
      systemSeconds: ru.systemCPUTime / 1e6,
      childrenSeconds,
      cpuSeconds: (ru.userCPUTime + ru.systemCPUTime) / 1e6 + childrenSeconds,
      maxRssBytes: ru.maxRSS * 1024,
    };
    try {
      fs.writeFileSync(file, JSON.stringify(usage) + '\n');
    } catch {
      // the bench reports the CPU time as unknown
    }
  });
}
