-- SPDX-License-Identifier: BSD-2-Clause
-- HAProxy Lua action for haproxy-edge.cfg (EDGE.md appendix B): waits up to
-- about 3 s for the whole first Minecraft frame, reads the handshake's host
-- (up to a NUL: Forge and forwarding suffixes dropped), lowercases it and
-- drops a trailing dot; sets txn.mc_host, or txn.mc_bad on a bad frame.
local function varint(s, i)
  local v, shift = 0, 0
  for k = 0, 4 do
    local b = s:byte(i + k)
    if not b then return nil, i end
    v = v | ((b & 0x7f) << shift)
    if b < 0x80 then return v, i + k + 1 end
    shift = shift + 7
  end
  return -1, i
end
core.register_action("mc_host", { "tcp-req" }, function(txn)
  local d, len, i
  for _ = 1, 3000 do
    d = txn.req:data(0) or ""
    len, i = varint(d, 1)
    if len ~= nil and (len < 0 or len > 300 or #d >= i + len - 1) then break end
    core.msleep(1)
  end
  if len == nil or len < 0 or len > 300 or #d < i + len - 1 then txn:set_var("txn.mc_bad", 1) return end
  local id; id, i = varint(d, i)
  local _;  _, i = varint(d, i)
  local hl; hl, i = varint(d, i)
  if id ~= 0 or not hl or hl < 1 or hl > 255 then txn:set_var("txn.mc_bad", 1) return end
  local host = d:sub(i, i + hl - 1):match("^[^%z]*"):lower():gsub("%.$", "")
  txn:set_var("txn.mc_host", host)
end)
