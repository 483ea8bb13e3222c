package main

import "github.com/spf13/cobra"

func demoCmd(g *globals) *cobra.Command {
	return &cobra.Command{Use: "demo", Short: "Guided run of the seed scenarios on embedded SQLite"}
}
