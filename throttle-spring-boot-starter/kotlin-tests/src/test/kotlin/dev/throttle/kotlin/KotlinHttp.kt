package dev.throttle.kotlin

import java.net.URI
import java.net.http.HttpClient
import java.net.http.HttpRequest
import java.net.http.HttpResponse

/** Plain HTTP through the application's real port, as a browser or curl would call it. */
class KotlinHttp(private val port: Int) {

    private val client: HttpClient = HttpClient.newHttpClient()

    fun get(path: String): HttpResponse<String> =
        client.send(HttpRequest.newBuilder(uri(path)).build(), HttpResponse.BodyHandlers.ofString())

    fun postJson(path: String, json: String): HttpResponse<String> =
        client.send(
            HttpRequest.newBuilder(uri(path))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(json))
                .build(),
            HttpResponse.BodyHandlers.ofString(),
        )

    fun login(user: String, password: String): HttpResponse<String> =
        postJson("/login", """{"user":"$user","password":"$password"}""")

    private fun uri(path: String) = URI.create("http://127.0.0.1:$port$path")
}

/** What a login form carries. */
data class Credentials(val user: String, val password: String)
