// @ts-check
/**
 * Preloaded into every benchmark child (`node --import …/report-usage.mjs …`): when the process
 * exits, writes its CPU time and peak RSS as one JSON line to the file named by
 * TAO_BENCH_USAGE_FILE. CPU is user + system of the whole process tree: this process (every
 * thread: the encode workers, V8's helpers, libuv's pool) plus the children it waited for
 * (`cutime`/`cstime` of /proc/self/stat). Nothing else: it must not change what it measures.
 *
 * `threads` splits this process's own CPU by thread, from `/proc/self/task/<tid>/stat` at exit:
 * the main thread, the threads still there at exit (V8's platform threads, libuv's pool, the
 * signal and inspector threads), and what the threads that ended before it used (the encode
 * workers, a lookup file's parsing thread): the total less the other two. Clock ticks of 1/100 s
 * per thread, so each figure is within some 0.01 s per thread of the truth.
 */
import fs from 'node:fs';

/**
 * User + system CPU-seconds of one `/proc/<pid>/stat` or `/proc/<pid>/task/<tid>/stat` text (fields
 * after the command name, which may hold spaces: utime is field 14, stime 15; USER_HZ is 100).
 * @param {string} stat
 */
function statSeconds(stat) {
  const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(rest[11]) + Number(rest[12])) / 100;
}

/**
 * This process's CPU by thread (see above); undefined without /proc.
 * @param {number} ownSeconds the process's own CPU-seconds (getrusage), every thread, ended ones included
 */
function threadSeconds(ownSeconds) {
  let main = 0;
  let alive = 0;
  let tids;
  try {
    tids = fs.readdirSync('/proc/self/task');
  } catch {
    return undefined;
  }
  for (const tid of tids) {
    let s;
    try {
      s = statSeconds(fs.readFileSync(`/proc/self/task/${tid}/stat`, 'utf8'));
    } catch {
      continue; // (ended while listed: counted with the ended threads)
    }
    if (Number(tid) === process.pid) main = s;
    else alive += s;
  }
  return { main, alive, ended: Math.max(0, ownSeconds - main - alive), aliveThreads: tids.length - 1 };
}

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
    const ownSeconds = (ru.userCPUTime + ru.systemCPUTime) / 1e6;
    const threads = threadSeconds(ownSeconds);
    const usage = {
      userSeconds: ru.userCPUTime / 1e6,
      systemSeconds: ru.systemCPUTime / 1e6,
      childrenSeconds,
      cpuSeconds: ownSeconds + childrenSeconds,
      maxRssBytes: ru.maxRSS * 1024,
      ...(threads ? { threads } : {}),
    };
    try {
      fs.writeFileSync(file, JSON.stringify(usage) + '\n');
    } catch {
      // the bench reports the CPU time as unknown
    }
  });
}
