module leader.dev/leader

go 1.19
