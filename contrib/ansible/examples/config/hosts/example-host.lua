-- Data for the machine whose host name is `example-host`.
return {
  motd = "this is example-host: backups run at 02:00\n",
}
