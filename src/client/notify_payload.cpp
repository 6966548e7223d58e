/*-------------------------------------------------------------------------
 *
 * notify_payload.cpp
 *	  A small reader for the flat JSON objects pg_fence sends with NOTIFY.
 *
 * Only what those payloads hold: one object of keys to strings (with the
 * escapes of RFC 8259, \uXXXX as UTF-8, surrogate pairs joined), numbers,
 * true, false and null.  Anything else makes the payload unreadable, and
 * the caller then reads the leader from the server instead.
 *
 * Copyright (c) 2026, The pg_fence Developers
 *
 * IDENTIFICATION
 *	  src/client/notify_payload.cpp
 *
 *-------------------------------------------------------------------------
 */
#include "notify_payload.hpp"

#include <cstdlib>
#include <map>

namespace fence::client_internal {

namespace {

class Reader
{
public:
	explicit Reader(const std::string &s) : s_(s) {}

	/* key -> value (nullopt: null; true/false/numbers as their text); false if malformed. */
	bool
	Object(std::map<std::string, std::optional<std::string>> *out)
	{
		Space();
		if (!Take('{'))
			return false;
		Space();
		if (Take('}'))
			return End();
		for (;;)
		{
			std::string key;
			Space();
			if (!String(&key))
				return false;
			Space();
			if (!Take(':'))
				return false;
			Space();
			std::optional<std::string> value;
			if (Peek() == '"')
			{
				std::string v;
				if (!String(&v))
					return false;
				value = v;
			}
			else
			{
				std::size_t start = i_;
				while (i_ < s_.size() && s_[i_] != ',' && s_[i_] != '}' && s_[i_] != ' ')
					i_++;
				std::string word = s_.substr(start, i_ - start);
				if (word.empty())
					return false;
				if (word != "null")
					value = word;
			}
			(*out)[key] = value;
			Space();
			if (Take('}'))
				return End();
			if (!Take(','))
				return false;
		}
	}

private:
	char
	Peek() const
	{
		return i_ < s_.size() ? s_[i_] : '\0';
	}
	bool
	Take(char c)
	{
		if (Peek() != c)
			return false;
		i_++;
		return true;
	}
	void
	Space()
	{
		while (i_ < s_.size() &&
			   (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r'))
			i_++;
	}
	bool
	End()
	{
		Space();
		return i_ == s_.size();
	}
	bool
	Hex4(unsigned *cp)
	{
		if (i_ + 4 > s_.size())
			return false;
		char       *end = nullptr;
		std::string h = s_.substr(i_, 4);
		*cp = static_cast<unsigned>(std::strtoul(h.c_str(), &end, 16));
		if (end != h.c_str() + 4)
			return false;
		i_ += 4;
		return true;
	}
	static void
	Utf8(unsigned cp, std::string *out)
	{
		if (cp < 0x80)
			out->push_back(static_cast<char>(cp));
		else if (cp < 0x800)
		{
			out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
			out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
		}
		else if (cp < 0x10000)
		{
			out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
			out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
			out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
		}
		else
		{
			out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
			out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
			out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
			out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
		}
	}
	bool
	String(std::string *out)
	{
		if (!Take('"'))
			return false;
		while (i_ < s_.size())
		{
			char c = s_[i_++];
			if (c == '"')
				return true;
			if (c != '\\')
			{
				out->push_back(c);
				continue;
			}
			if (i_ >= s_.size())
				return false;
			char e = s_[i_++];
			switch (e)
			{
				case '"':
				case '\\':
				case '/':
					out->push_back(e);
					break;
				case 'b':
					out->push_back('\b');
					break;
				case 'f':
					out->push_back('\f');
					break;
				case 'n':
					out->push_back('\n');
					break;
				case 'r':
					out->push_back('\r');
					break;
				case 't':
					out->push_back('\t');
					break;
				case 'u':
				{
					unsigned cp;
					if (!Hex4(&cp))
						return false;
					if (cp >= 0xD800 && cp < 0xDC00 && i_ + 1 < s_.size() && s_[i_] == '\\' &&
						s_[i_ + 1] == 'u')
					{
						i_ += 2;
						unsigned low;
						if (!Hex4(&low) || low < 0xDC00 || low >= 0xE000)
							return false;
						cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
					}
					Utf8(cp, out);
					break;
				}
				default:
					return false;
			}
		}
		return false;
	}

	const std::string &s_;
	std::size_t        i_ = 0;
};

} // namespace

std::optional<NotifyPayload>
ParseNotifyPayload(const std::string &json)
{
	std::map<std::string, std::optional<std::string>> kv;
	if (!Reader(json).Object(&kv))
		return std::nullopt;
	auto get = [&](const char *key) -> const std::optional<std::string> * {
		auto it = kv.find(key);
		return it == kv.end() ? nullptr : &it->second;
	};
	const auto *name = get("name"), *kind = get("kind"), *event = get("event"),
			   *token = get("token");
	if (!name || !*name || !kind || !*kind || !event || !*event || !token || !*token)
		return std::nullopt;
	NotifyPayload p;
	p.name = **name;
	p.kind = **kind;
	p.event = **event;
	char *end = nullptr;
	p.token = std::strtoll(token->value().c_str(), &end, 10);
	if (end == token->value().c_str() || *end != '\0')
		return std::nullopt;
	const auto *truncated = get("name_truncated");
	p.name_truncated = truncated && *truncated && **truncated == "true";
	if (const auto *holder = get("holder"))
		p.holder = *holder;
	if (const auto *at = get("at"))
		p.at = *at;
	if (const auto *expires_at = get("expires_at"))
		p.expires_at = *expires_at;
	return p;
}

} // namespace fence::client_internal
