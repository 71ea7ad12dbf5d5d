// Command probe reports the clocks its Go runtime sees, for
// TestClockHook: for each line "now" on stdin it prints its wall clock and
// its monotonic clock since it started, in nanoseconds; for "sleep D" it
// sleeps D by its own timers, then prints "slept".
package main

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"time"
)

func main() {
	start := time.Now()
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		cmd, arg, _ := strings.Cut(in.Text(), " ")
		switch cmd {
		case "now":
			fmt.Println(time.Now().UnixNano(), time.Since(start).Nanoseconds())
		case "sleep":
			d, err := time.ParseDuration(arg)
			if err != nil {
				fmt.Println("error", err)
				continue
			}
			time.Sleep(d)
			fmt.Println("slept")
		}
	}
}
