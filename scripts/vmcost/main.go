//go:build linux

// Command vmcost measures what this machine's kernel charges for the two
// things a userspace overlay does many times per packet and the kernel's
// own overlay does not: a system call, and handing the CPU from one thread
// to another. A frame through vnicd costs at least two system calls on each
// host, and a ping's round trip switches threads four times more than one
// through kernel VXLAN, so these two figures set a floor under vnicd's
// latency and a share of its CPU time that no work on its own code removes.
// They differ tenfold between bare metal and some VMs (a getppid(2) is
// about 0.1 us on bare metal, 1 us on the VM of bench/RESULTS.md), which
// is why scripts/bench.sh prints them above its tables.
//
// It prints one line:
//
//	system call 0.96 us; pipe round trip (two thread switches) 14.4 us on one CPU, 23.4 us across two
//
// The system call is getppid(2), the cheapest there is: the best of five
// batches of -n calls. A pipe round trip is one byte written to a child
// process that waits in read(2) and writes it back, while this process waits
// in read(2): two wake-ups and two switches, and four system calls. It is
// measured with both processes pinned to one CPU, and to two different CPUs
// (skipped when fewer than two are allowed), the median of three runs of -n
// round trips each. Run it on a quiet machine; it takes about a second.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// runBound bounds one run of round trips (about 0.5 s at -n 20000 on the
// slowest machine seen).
const runBound = 30 * time.Second

// childEnv marks the re-executed child: its value is the CPU to pin to.
const childEnv = "VMCOST_CHILD_CPU"

func main() {
	runChildIfAsked()
	n := flag.Int("n", 20000, "system calls per batch and round trips per run (1000 to 1000000)")
	flag.Parse()
	if *n < 1000 || *n > 1000000 {
		fmt.Fprintln(os.Stderr, "vmcost: -n must be 1000 to 1000000")
		os.Exit(2)
	}
	line, err := measure(*n)
	if err != nil {
		fmt.Fprintln(os.Stderr, "vmcost:", err)
		os.Exit(1)
	}
	fmt.Println(line)
}

func measure(n int) (string, error) {
	// The round trips wait in raw system calls, which keep their P: the
	// watchdog's timer needs another.
	if runtime.GOMAXPROCS(0) < 2 {
		runtime.GOMAXPROCS(2)
	}
	runtime.LockOSThread()
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return "", fmt.Errorf("sched_getaffinity: %w", err)
	}
	var cpus []int
	for c := 0; c < 1024 && len(cpus) < 2; c++ {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	if len(cpus) == 0 {
		return "", errors.New("no CPU in this process's affinity set")
	}
	line := "system call " + us(syscallCost(n))
	one, err := roundTrips(n, cpus[0], cpus[0])
	if err != nil {
		return "", err
	}
	line += "; pipe round trip (two thread switches) " + us(one) + " on one CPU"
	if len(cpus) > 1 {
		two, err := roundTrips(n, cpus[0], cpus[1])
		if err != nil {
			return "", err
		}
		line += ", " + us(two) + " across two"
	} else {
		line += " (one CPU allowed: no figure across two)"
	}
	return line, nil
}

// syscallCost is the best of five batches of n getppid(2) calls, per call.
func syscallCost(n int) time.Duration {
	best := time.Duration(1<<63 - 1)
	for range 5 {
		t0 := time.Now()
		for range n {
			unix.RawSyscall(unix.SYS_GETPPID, 0, 0, 0)
		}
		best = min(best, time.Since(t0)/time.Duration(n))
	}
	return best
}

// roundTrips is the median of three runs of n pipe round trips, this
// thread pinned to cpu and the child to childCPU, per round trip.
func roundTrips(n, cpu, childCPU int) (time.Duration, error) {
	var set unix.CPUSet
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return 0, fmt.Errorf("pin to CPU %d: %w", cpu, err)
	}
	runs := make([]time.Duration, 0, 3)
	for range 3 {
		d, err := roundTripRun(n, childCPU)
		if err != nil {
			return 0, err
		}
		runs = append(runs, d)
	}
	slices.Sort(runs)
	return runs[1], nil
}

func roundTripRun(n, childCPU int) (time.Duration, error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, err
	}
	// Blocking pipes (not os.Pipe's, which the runtime's poller would
	// drive): both ends wait in read(2) itself.
	var ping, pong [2]int
	if err := unix.Pipe2(ping[:], unix.O_CLOEXEC); err != nil {
		return 0, fmt.Errorf("pipe: %w", err)
	}
	if err := unix.Pipe2(pong[:], unix.O_CLOEXEC); err != nil {
		unix.Close(ping[0])
		unix.Close(ping[1])
		return 0, fmt.Errorf("pipe: %w", err)
	}
	childIn, childOut := os.NewFile(uintptr(ping[0]), "ping"), os.NewFile(uintptr(pong[1]), "pong")
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), childEnv+"="+strconv.Itoa(childCPU))
	cmd.ExtraFiles = []*os.File{childIn, childOut} // fds 3 and 4
	cmd.Stderr = os.Stderr
	err = cmd.Start()
	childIn.Close()
	childOut.Close()
	if err != nil {
		unix.Close(ping[1])
		unix.Close(pong[0])
		return 0, fmt.Errorf("start the child: %w", err)
	}
	// The child exits on EOF, when ping's write end closes; one stuck
	// otherwise is killed after a bound. So is one that stops echoing
	// during the run (the watchdog): its death ends the read waiting for it.
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	watchdog := time.AfterFunc(runBound, func() { _ = cmd.Process.Kill() })
	defer func() {
		watchdog.Stop()
		unix.Close(ping[1])
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		unix.Close(pong[0])
	}()

	var b [1]byte
	trip := func() error {
		if _, err := rawIO(unix.SYS_WRITE, ping[1], &b); err != nil {
			return fmt.Errorf("write to the child: %w", err)
		}
		k, err := rawIO(unix.SYS_READ, pong[0], &b)
		if err != nil {
			return fmt.Errorf("read from the child: %w", err)
		}
		if k == 0 {
			return errors.New("the child exited")
		}
		return nil
	}
	for range n / 10 { // warm up: both processes running and pinned
		if err := trip(); err != nil {
			return 0, err
		}
	}
	t0 := time.Now()
	for range n {
		if err := trip(); err != nil {
			return 0, err
		}
	}
	return time.Since(t0) / time.Duration(n), nil
}

// runChildIfAsked runs the echoing child and exits when this process was
// started as one (childEnv set), and returns otherwise. main and the test
// binary's TestMain call it first.
func runChildIfAsked() {
	cpu, ok := os.LookupEnv(childEnv)
	if !ok {
		return
	}
	if err := child(cpu); err != nil {
		fmt.Fprintln(os.Stderr, "vmcost child:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// child pins itself to cpu and echoes bytes from fd 3 to fd 4 until EOF.
func child(cpu string) error {
	runtime.LockOSThread()
	c, err := strconv.Atoi(cpu)
	if err != nil {
		return err
	}
	var set unix.CPUSet
	set.Set(c)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return fmt.Errorf("pin to CPU %d: %w", c, err)
	}
	var b [1]byte
	for {
		k, err := rawIO(unix.SYS_READ, 3, &b)
		if err != nil {
			return err
		}
		if k == 0 {
			return nil
		}
		if _, err := rawIO(unix.SYS_WRITE, 4, &b); err != nil {
			return err
		}
	}
}

// rawIO is read(2) or write(2) (trap) of one byte, retried on EINTR, as a
// raw system call: the Go scheduler takes no part (unix.Read would hand the
// thread's P to another thread while it waits, and take it back after, which
// adds its own switches to the ones measured).
func rawIO(trap uintptr, fd int, b *[1]byte) (int, error) {
	for {
		n, _, errno := unix.RawSyscall(trap, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), 1)
		if errno == unix.EINTR {
			continue
		}
		if errno != 0 {
			return 0, errno
		}
		return int(n), nil
	}
}

func us(d time.Duration) string {
	f := float64(d) / float64(time.Microsecond)
	if f < 10 {
		return strconv.FormatFloat(f, 'f', 2, 64) + " us"
	}
	return strconv.FormatFloat(f, 'f', 1, 64) + " us"
}
