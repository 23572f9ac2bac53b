// @ts-check
/**
 * Preloaded into every benchmark child (`node --import …/report-usage.mjs …`): when the process
 * exits, writes its CPU time and peak RSS as one JSON line to the file named by
 * TAO_BENCH_USAGE_FILE. CPU is user + system of the whole process tree: this process (every
 * thread: the encode workers, V8's helpers, libuv's pool) plus the children it waited for
 * (`cutime`/`cstime` of /proc/self/stat). Nothing else: it must not change what it measures.
 *
 * `minorFaults` counts the page faults of this process (every thread) that found no page yet: on a
 * virtual machine each costs the guest and the host some microseconds of system time.
 *
 * `threads` splits this process's own CPU by thread, from `/proc/self/task/<tid>/stat` at exit:
 * the main thread, the threads still there at exit (V8's platform threads, libuv's pool, the
 * signal and inspector threads), and what the threads that ended before it used (the encode
 * workers, a lookup file's parsing thread): the total less the other two. Clock ticks of 1/100 s
 * per thread, so each figure is within some 0.01 s per thread of the truth.
 */
import fs from 'node:fs';

/**
 * Clock ticks (1/100 s: USER_HZ) of a `/proc/<pid>/stat` or `/proc/<pid>/task/<tid>/stat` text as
 * seconds: fields `a` and `b` (1-based, as proc(5) numbers them: utime 14, stime 15, cutime 16,
 * cstime 17), counted after the command name, which may hold spaces.
 * @param {string} stat
 * @param {number} a
 * @param {number} b
 */
function statSeconds(stat, a, b) {
  const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // rest[0] is field 3
  return (Number(rest[a - 3]) + Number(rest[b - 3])) / 100;
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
      s = statSeconds(fs.readFileSync(`/proc/self/task/${tid}/stat`, 'utf8'), 14, 15);
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
      childrenSeconds = statSeconds(fs.readFileSync('/proc/self/stat', 'utf8'), 16, 17);
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
      minorFaults: ru.minorPageFault,
      ...(threads ? { threads } : {}),
    };
    try {
      fs.writeFileSync(file, JSON.stringify(usage) + '\n');
    } catch {
      // the bench reports the CPU time as unknown
    }
  });
}
