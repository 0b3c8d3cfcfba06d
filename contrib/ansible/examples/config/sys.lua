-- One config for every machine of a small fleet. The playbook passes the
-- host's role as a fact (`--fact role=web`); a file under hosts/ named after
-- the host name adds what only that machine has.
local ME, GRP = sys.user.name, sys.user.group
defaults { file = { owner = ME, group = GRP, mode = "0644" } }

local role = sys.facts.role or "workstation"

-- hosts/<hostname>.lua returns a table of data for that one machine, if there is one
-- (the full host name first, then its first label: web1.example.org, then web1).
-- A mistake in that file is an error, not a silent fallback to no data.
local host = {}
for _, name in ipairs({ sys.hostname, (sys.hostname:match("^[^.]+")) }) do
  local found = sys.glob("hosts/" .. name .. ".lua")
  if found[1] then
    host = dofile(sys.dir .. "/" .. found[1])
    break
  end
end

file { path = "~/.config/fleet", ensure = "directory", mode = "0755" }
file {
  path = "~/.config/fleet/motd",
  content = "role: " .. role .. "\n" .. (host.motd or "managed by syslua\n"),
}
env { FLEET_ROLE = role }

if role == "web" then
  file { path = "~/.config/fleet/web.conf", content = "listen = 8080\n" }
end
