-- What script/bootstrap does: every TOPIC/NAME.symlink is a link ~/.NAME.
for _, src in ipairs(sys.glob("*/*.symlink")) do
  file { path = "~/." .. src:match("([^/]+)%.symlink$"), source = src, link = true }
end
